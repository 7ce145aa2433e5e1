"""Operations: the CLI (and later metrics and the console)."""
