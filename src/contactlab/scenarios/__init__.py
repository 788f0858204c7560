"""Named scenes and data sets."""
