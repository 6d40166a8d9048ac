"""The server's side of a translation: one computation per request, shared, bounded and stopped when abandoned.

    scheduler  translations cached per (model, text, settings), the decode slots and the room's batches
    cancel     a stop signal for the current browser session's script run
    memory     give freed memory back to the system
    sized_lru  caches every session shares, bounded by the bytes they hold
    weak_fragment  a fragment that leaves its translations to the shared store
"""
