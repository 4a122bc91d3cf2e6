"""The bot SDK: local play, the arena, bot loading, the network loop and the docs."""
