from .rda import VotedRDA  # noqa: F401
