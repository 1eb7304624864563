"""What benchrun prints: output streams and one-line errors, the run's tables, the progress bar; text from outside
with its control characters made visible (`visible`)."""
