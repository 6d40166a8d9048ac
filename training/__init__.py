"""The training pipeline: the corpus and its batches, the paper's schedule and loss, training (one process or
torchrun), evaluation with diagnostics, checkpoint averaging, export and the model card. A run's settings are one
TrainConfig, given as flags or as a recipe file of ``training/recipes/`` (every stage of the shipped en-de model's
lineage and every run of its recipe study is one).

    presets         each task's model sizes and schedule (the flags' defaults)
    config          TrainConfig, frozen and validated, and the recipe files (TOML) that hold one
    flags           training.train's command line: the flags, or --recipe NAME with --set KEY=VALUE
    data            the parallel corpus, the reversal task, length-bucketed token batches
    augment         copies of pairs with names and numbers substituted on both sides
    alignment       guided alignment of copies: one cross-attention head taught to look at the piece copied
    vocab_transfer  a trained model carried over to a new tokenizer
    grow            a trained model's FFNs widened, the new units silent
    schedule        the paper's learning rate, the cool-down, the recipe keys a checkpoint records
    loss            label-smoothed cross-entropy and the validation loss
    diagnostics     attention spread and what the source is worth
    distributed     torchrun: DDP on NCCL or gloo
    run_files       a run directory's optimizer state, CSV logs, kept epochs and recipe.toml
    train           python -m training.train: build or resume a run, train, validate, save
    evaluate        BLEU and chrF per source and length, the everyday and names-and-numbers sets
    length_penalty  beam search's α chosen on the validation split
    average         checkpoint averaging (paper 6.1)
    rescore         every kept epoch's validation BLEU/chrF on the same sentences
    study           the recipe study table (study.csv)
    copy_lexicon    the copy lexicon of a corpus's train split, written beside a checkpoint
    export          a run shipped in fp16 shards, or one epoch as a snapshot
    card            python -m training.card: a model card's facts measured, then rendered
    card_text       the card rendered from its facts: frame, training section, limitations
    card_sections   the card's sections from reports: scores, diagnostics, names and numbers, study, snapshots
    vision          the Vision page's ViT and Swin trained on the bundled digits, with their cards

Imports ``model`` (and ``explain`` for attention statistics); nothing in ``model`` or ``app`` imports it,
except the app reading the pure schedule formula (``training.schedule``). Never runs in CI beyond tiny tests.
"""
