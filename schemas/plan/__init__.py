"""Plans: the model, references between steps and validation, shared by workflow and policies."""
