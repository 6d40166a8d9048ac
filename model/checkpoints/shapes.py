"""Which tensors, of which shapes, the Transformer of a config holds: what a checkpoint's weights are checked against
before any model is built (a file that claims other shapes is refused without being read)."""
from __future__ import annotations

from model.network.config import ModelConfig


def expected_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every tensor in Transformer(config).state_dict(), all floating point, without building the
    model (tested equal to the built one's; their sizes add up to config.estimated_parameters())."""
    d, inner = config.d_model, config.n_heads * config.d_k
    shapes: dict[str, tuple[int, ...]] = {"embed.token.weight": (config.vocab_size, d)}
    if config.final_logits_bias:
        shapes["final_logits_bias"] = (config.vocab_size,)
    if not config.tie_output:
        shapes["output.weight"] = (config.vocab_size, d)

    def add(prefix: str, n_out: int, n_in: int | None = None, bias: bool = True) -> None:  # a Linear or a norm
        shapes[f"{prefix}.weight"] = (n_out,) if n_in is None else (n_out, n_in)
        if bias:
            shapes[f"{prefix}.bias"] = (n_out,)

    def norm(prefix: str) -> None:  # LayerNorm has a bias, RMSNorm none
        add(prefix, d, bias=config.norm == "layer")

    b = config.linear_bias
    for stack, n_layers, attentions in (("encoder", config.n_encoder_layers, ("self_attn",)),
                                        ("decoder", config.n_decoder_layers, ("self_attn", "cross_attn"))):
        for i in range(n_layers):
            layer = f"{stack}.layers.{i}"
            for attention in attentions:
                for w in ("w_q", "w_k", "w_v"):
                    add(f"{layer}.{attention}.{w}", inner, d, b)
                add(f"{layer}.{attention}.w_o", d, inner, b)
            for ffn in ("linear1", "gate") if config.ffn_gated else ("linear1",):
                add(f"{layer}.feed_forward.{ffn}", config.d_ff, d, b)
            add(f"{layer}.feed_forward.linear2", d, config.d_ff, b)
            for j in range(len(attentions) + 1):
                norm(f"{layer}.sublayers.{j}.norm")
        if config.norm_first:
            norm(f"{stack}.final_norm")
        if config.positional_layout == "learned":
            shapes[f"embed.learned.{stack}.weight"] = (config.position_table, d)
        if config.positional_layout == "relative":
            shapes[f"{stack}.relative_bias.table.weight"] = (config.relative_buckets, config.n_heads)
        if config.layernorm_embedding:
            add(f"embed.norms.{stack}", d)
    return shapes
