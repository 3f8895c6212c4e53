"""User-facing tables and plots."""
