"""Where kernels are written by models: rewards for RL trainers.

``completion`` takes a candidate from a model's completion; ``shaping`` turns a report into a
reward; ``scorer`` scores batches concurrently within a deadline; ``trl`` and ``verl`` are the
reward functions in those trainers' signatures (the server's reward endpoint is
``kernelproof.serve.rewards``). See docs/rl.md.
"""
