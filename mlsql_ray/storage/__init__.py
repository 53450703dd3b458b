"""Files as table rows (pyjava's storage helpers)."""
