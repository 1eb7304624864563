"""Auditing past runs from the archive alone: list, show, rescore, compare, verify, export, resume, report."""
