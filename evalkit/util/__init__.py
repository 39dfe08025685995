"""Small helpers every layer may use: errors, optional extras, JSON(L) reading, k=v options, file systems, hub reachability, paths."""
