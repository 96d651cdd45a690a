"""Model backends: where the council's calls go (`simulated` or any OpenAI-compatible endpoint)."""
