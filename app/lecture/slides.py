"""The guided tour of the paper, as data: one Slide per step, in lecture order.

A slide names its figure (a maker in app.views.slide_figures, which reuses the concept pages' chart builders on
the current sentence) and says what to tell in two or three short lines. Lines and titles are format strings
over the facts of the sentence and the model (app.views.slide_figures.facts, plus what the figure's maker adds);
they are Markdown. Reordering, adding or rewording a slide is an edit here only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from app.models.examples import languages


@dataclass(frozen=True)
class Slide:
    title: str
    lines: tuple[str, ...]
    figure: str  # a key of app.views.slide_figures.MAKERS
    args: dict = field(default_factory=dict)  # keyword arguments of that maker
    notes: str = ""  # speaker notes, shown collapsed


# What the cross-attention should look like, by task or language pair (a fact for the lines).
REORDER_HINT = {
    "en-de": "German often moves the verb to the end of a clause: look for weight leaving the diagonal.",
    "reverse": "To reverse, output letter t must read the mirrored source letter: the map is an anti-diagonal.",
}
# A sentence each shipped model is known to get wrong (from its model card), with the right answer.
FAILURES = {
    "en-de": ("Oskar Brandt was elected mayor of Kiel in 2014.",  # greedy and beam 4 drop "mayor of Kiel"
              "Oskar Brandt wurde 2014 zum Bürgermeister von Kiel gewählt."),
    "reverse": ("a b c d e f g h i j k l m n o p", "p o n m l k j i h g f e d c b a"),
}

SLIDES: tuple[Slide, ...] = (
    Slide(title="The task: translate one sentence",
          lines=("An **encoder** reads *{source}* ({n_src} pieces); a **decoder** writes, one piece at a time, "
                 "*{output}*",
                 "Everything in between is attention. This tour opens each part on this very sentence."),
          figure="architecture",
          notes="Vaswani et al. (2017), figure 1, drawn with this model's sizes: {n_enc} + {n_dec} layers, "
                "d_model {d_model}, {n_heads} heads. The paper's base model: 6 + 6 layers, d_model 512, 8 heads, "
                "65M parameters, trained on 4.5M sentence pairs."),
    Slide(title="Tokens and their embeddings × √d_model",
          lines=("The sentence is cut into {n_src} sub-word pieces; each becomes a learned vector of {d_model} "
                 "numbers (one row below).",
                 "The vectors are multiplied by √d_model = √{d_model} ≈ {sqrt_d:.1f}, so that the position code "
                 "added next does not drown them."),
          figure="embeddings", args={"parts": ("token",)},
          notes="One matrix E ({vocab} × {d_model}) is the encoder's input embedding, the decoder's, and, "
                "transposed, the output layer before the softmax (section 3.4)."),
    Slide(title="Positional encoding: where each piece is",
          lines=("Attention alone ignores word order, so a fixed pattern of sines and cosines is **added** to "
                 "each position.",
                 "Fast waves on the left, slow ones on the right: together a unique code for every position."),
          figure="embeddings", args={"parts": ("token", "positional", "sum")},
          notes="PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(…). For any offset k, PE[pos+k] "
                "is a fixed rotation of PE[pos], so 'k places back' is one linear map. Learned positions did as "
                "well (Table 3, row E); the sinusoids need no parameters."),
    Slide(title="Queries, keys, values: one head with real numbers",
          lines=("Each piece asks with a query q and answers with a key k: q · k, divided by √d_k = √{d_k}, is "
                 "the score.",
                 "Softmax turns the query *{query}*'s scores into weights that sum to 1: *{winner}* wins with "
                 "{winner_weight:.2f}. The head outputs the weighted sum of the values."),
          figure="stages", args={"kind": "enc_self", "layer": 0, "head": 0},
          notes="Attention(Q, K, V) = softmax(QKᵀ / √d_k) V. Without the division, wide heads give large scores, "
                "the softmax saturates and its gradient vanishes (section 3.2.1). The Mechanics page shows every "
                "matrix of this head."),
    Slide(title="Multi-head attention: {n_heads} heads at once",
          lines=("Each layer runs {n_heads} heads side by side, each with its own projections to {d_k} "
                 "dimensions.",
                 "Every small map is one head of the encoder (rows: layers): each looks at something else."),
          figure="model_view", args={"kind": "enc_self"},
          notes="MultiHead = Concat(head₁ … head_h) Wᴼ, at the cost of one full-width head. A single head was "
                "0.9 BLEU worse in the paper (Table 3, row A)."),
    Slide(title="Encoder self-attention",
          lines=("Every source piece looks at every source piece, in both directions: nothing is masked.",
                 "The last encoder layer's two most focused heads (the legend adds the others): each line joins a "
                 "query (left) to a key (right); darker means more weight."),
          figure="head_view", args={"kind": "enc_self", "layer": -1},
          notes="{n_enc} encoder layers, each reading the one below. The top layer's output is what every "
                "decoder layer's cross-attention reads."),
    Slide(title="Masks: what a position may not see",
          lines=("The decoder must not peek at the words it is about to write: position t sees positions ≤ t "
                 "only (the causal mask).",
                 "Masked scores become −∞ before the softmax, so their weights are exactly 0. Padding in a batch "
                 "is masked the same way."),
          figure="mask", args={"kind": "dec_self"},
          notes="One convention in this code: a bool grid, True = may attend; padding [B, 1, 1, S] and causal "
                "[1, 1, T, T] combined with AND. The Masks page pads two sentences into one batch."),
    Slide(title="Masked decoder self-attention",
          lines=("Row t is the step that writes output piece t (named on the left); it reads `{start}` and the "
                 "pieces written before it (the columns).",
                 "Grey cells are masked: a step never reads its own piece or later ones; their weight is exactly 0."),
          figure="heatmap", args={"kind": "dec_self", "layer": 0, "head": -1},
          notes="Training feeds the whole reference shifted right at once (teacher forcing); the mask makes that "
                "equal to writing one piece at a time."),
    Slide(title="Cross-attention: the soft alignment",
          lines=("Each row is the step that writes the piece named on the left; it looks at the encoded source "
                 "(columns) while it chooses that piece.",
                 "{reorder_hint}"),
          figure="heatmap", args={"kind": "cross", "layer": -1, "head": -1},
          notes="Queries come from the decoder; keys and values from the encoder's output (section 3.2.3). "
                "This is the alignment older RNN models learned with additive attention (Bahdanau, 2015)."),
    Slide(title="Decoding step by step: greedy",
          lines=("At each step the decoder gives every one of the {vocab} pieces a probability; greedy decoding "
                 "takes the most probable.",
                 "Step {step} of {n_steps}, where the model was least sure: red is the piece it chose."),
          figure="topk",
          notes="The Decoding page walks every step (keys ← and →) with the attention rows behind each choice."),
    Slide(title="Why this piece and not that one?",
          lines=("At step {step}, where the model was least sure, it wrote *{chosen}* (p = {p_chosen:.2f}), not "
                 "*{runner_up}* (p = {p_runner_up:.2f}). Which source pieces made the difference?",
                 "Top: where that step looked (cross-attention). Bottom: what moved the choice (integrated "
                 "gradients); red pushes towards *{chosen}*, blue towards *{runner_up}*.",
                 "Most attended: *{most_attended}* · pushing most: *{most_pushing}* · attention and attribution need "
                 "not agree."),
          figure="contrastive",
          notes="Integrated gradients (Sundararajan et al., 2017) of f = log p({chosen}) − log p({runner_up}) over the "
                "source's token vectors, from the baseline ({ig_baseline}) in {ig_steps} Gauss-Legendre steps: the "
                "attributions sum to {ig_total:.2f} against f(x) − f(baseline) = {ig_delta:.2f} (completeness gap "
                "{ig_gap:+.2f}). Attention shows where a step looked, attribution what changed its output; they need "
                "not agree (Jain and Wallace, 2019). The Decoding page asks the same at any step, against any piece "
                "of its top-k, and for any hypothesis beam search pruned."),
    Slide(title="Beam search: the {beam} best prefixes",
          lines=("Beam search keeps the {beam} most probable partial translations at every step and may find a "
                 "better whole sentence.",
                 "Red is the best path (*{beam_output}*); grey crosses were pruned."),
          figure="beam_tree", args={"beam": 4},
          notes="Finished hypotheses are ranked by log-prob / ((5 + length) / 6)^α (the GNMT length penalty, "
                "α from the Translate page's settings). The paper used beam 4 and α = 0.6."),
    Slide(title="Heads that matter",
          lines=("Switch one head off and measure how much the log-probability of this output drops (Michel et "
                 "al., 2019).",
                 "Most heads can go; a few carry the translation. Here: {top_heads}."),
          figure="importance",
          notes="Red = the output gets less likely without that head, blue = more likely. The Heads page switches "
                "several off at once and decodes again."),
    Slide(title="Training: the warm-up schedule",
          lines=("The paper's formula (left): the rate rises linearly for the first {warmup} steps, then decays "
                 "as 1/√step.",
                 "Large early steps on Adam's still noisy estimates would wreck a post-norm Transformer. Right: "
                 "the rate this model's real run used."),
          figure="lr",
          notes="lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), with Adam β₁ = 0.9, β₂ = 0.98, "
                "ε = 10⁻⁹ (section 5.3). The paper warmed up for 4000 steps. {restarts} {cooldowns}"),
    Slide(title="Training: label smoothing",
          lines=("The target is not one-hot: the true piece gets 1 − ε + ε/V, every other piece ε/V. The bars: "
                 "a toy vocabulary of {toy_vocab} pieces, this model's ε = {epsilon:g}.",
                 "The model learns to be less sure: perplexity gets worse, accuracy and BLEU better (section 5.4)."),
          figure="label_smoothing",
          notes="With this model's V = {vocab} pieces the true piece's target is {true_target:.4f}; the chart uses "
                "a toy vocabulary of {toy_vocab} pieces so the small bars stay visible."),
    Slide(title="Training: watch the alignment form",
          lines=("The same sentence read by this model after {earlier} of training and at {final}, each given "
                 "this model's own output.",
                 "At {first} every source piece gets about the same weight; the alignment appears as the model "
                 "learns to translate."),
          figure="learning",
          notes="The snapshots are epochs of a rerun of this model's recipe from scratch, shipped beside it. The "
                "Heads page (Watch attention learn) shows any head, their own translations and how the rows' "
                "entropy falls over the training steps."),
    Slide(title="What the model gets wrong",
          lines=("{limitation}",
                 "A known failure: *{fail_source}* → *{fail_output}* (right: *{fail_reference}*).",
                 "Marked ✗ in red: source words no output word reads (dropped): {dropped}."),
          figure="failure",
          notes="The attention on screen is exactly what the model used, right or wrong; it shows where the model "
                "looked, not why it chose a piece. See the model card on the Model and training page. A dropped or "
                "garbled name is a search problem too: with a beam of 2 or more, the Translate page's *Keep names "
                "and numbers* makes beam search write them as they are (the model unchanged, its attention its own)."),
)


def reorder_hint(meta: dict) -> str:
    """REORDER_HINT of the checkpoint's task (a model trained here) or language pair (any translation model)."""
    pair = languages(meta)
    task = meta.get("task")
    key = task if isinstance(task, str) and task in REORDER_HINT else f"{pair[0]}-{pair[1]}" if pair else ""
    return REORDER_HINT.get(key, "Look for the source pieces each output piece reads.")
