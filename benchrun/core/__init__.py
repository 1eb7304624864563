"""The facts every stage shares: records, the manifest, the typed config, errors and exit codes, the run
directory's names and statuses, secrets, signals. Imports nothing of benchrun's outside itself."""
