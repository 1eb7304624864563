"""The composed config as checked data (Hydra's resolvers and typed defaults, runner files, credentials
refused), what a sweep job is called, and what Hydra made for a run that never started."""
