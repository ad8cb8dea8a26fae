"""Per-track musical evidence: feature extraction, the channel registry and the feature store."""
