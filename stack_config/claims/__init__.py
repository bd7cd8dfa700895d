"""DRA claims: the claim templates that pair GPUs with rails, and the judge of any claim."""
