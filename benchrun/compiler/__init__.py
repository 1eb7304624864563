"""Config + benchmark files -> `Plan`: the frozen manifest and the scorer functions it names. No network,
no archive."""
