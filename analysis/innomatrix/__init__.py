"""innomatrix: plan, run and analyse InnoDB storage benchmark matrices."""
