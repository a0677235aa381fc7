"""The model zoo: the tiny transformer with every knob a theory paper switches, its TransformerLens-named hooks
and activation cache, the recurrent and fused mixers, the CUDA allocator setting, Hugging Face adapters and the
protocol a probed model satisfies."""
