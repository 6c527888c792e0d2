"""The embedded CPU backend: a tiny Qwen2-architecture LM, synthetic verifiable arithmetic,
a KV-cache sampler and verl's own loss functions, all in one process."""
