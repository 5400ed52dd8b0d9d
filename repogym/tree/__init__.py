"""The trees a grade reads: git, the private store and snapshot of the submission,
the base's shared trees, link-safe paths and globs."""
