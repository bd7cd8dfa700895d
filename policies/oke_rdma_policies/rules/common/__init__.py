"""What several capabilities share."""
