#!/usr/bin/env bash
# Rebuild docs/assumptions.md from the per-engine parts in docs/_parts/.
set -euo pipefail
cd "$(dirname "$0")"
{
  echo "# Assumptions: where the papers are ambiguous"
  echo
  echo "One entry per point: the paper and section, the reading chosen, why, what it changes, and"
  echo "the parameter that exposes the alternative. Generated from \`docs/_parts/\` by"
  echo "\`docs/build_assumptions.sh\`; edit the parts."
  echo
  for part in core sim desktop decentral mdp optimal srn muscle dispatch traces validation exports report runner bench papers; do
    f="_parts/assumptions-$part.md"
    [ -f "$f" ] || continue
    echo
    cat "$f"
    echo
  done
} > assumptions.md
