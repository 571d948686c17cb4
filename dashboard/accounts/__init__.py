"""API tokens and sign-in pages."""
