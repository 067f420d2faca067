"""Operations: diagnostics (read-only health signals) and repair."""
