"""What a trained word2vec model says about words in context: output-word prediction and sentence scores.

Both read the tables only (``W_in`` the word vectors, ``W_out`` the output table) and follow gensim's
definitions, so ``Word2Vec.predict_output_word`` and ``Word2Vec.score`` answer as gensim's do.
"""
import logging

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["context_vector", "predict_output_word", "score_sentences"]


def context_vector(W_in, key_to_index, context, cbow_mean=True):
    """Mean (or sum) of the input vectors of the known words of ``context`` (words or row indices);
    None when none is known."""
    ids = []
    for word in context:
        if isinstance(word, (int, np.integer)) and not isinstance(word, bool):
            if 0 <= word < W_in.shape[0]:
                ids.append(int(word))
        elif word in key_to_index:
            ids.append(key_to_index[word])
    if not ids:
        return None
    h = W_in[ids].sum(axis=0, dtype=np.float64)
    return h / len(ids) if cbow_mean else h


def predict_output_word(W_in, W_out, index_to_key, key_to_index, context, topn=10, cbow_mean=True):
    """The ``topn`` most probable centre words for ``context`` under the full softmax of the output table.

    Returns a list of ``(word, probability)``, most probable first, or None (with a warning) when no
    context word is in the vocabulary.
    """
    h = context_vector(W_in, key_to_index, context, cbow_mean)
    if h is None:
        logger.warning("none of the context words %r is in the vocabulary", list(context)[:10])
        return None
    scores = W_out[:len(index_to_key)].astype(np.float64) @ h
    scores -= scores.max()
    probs = np.exp(scores)
    probs /= probs.sum()
    top = np.argsort(-probs, kind="stable")[:topn]
    return [(index_to_key[i], float(probs[i])) for i in top]


def score_sentences(sentences, W_in, W_out, key_to_index, offsets, points, codes, window, sg, cbow_mean,
                    total_sentences=None):
    """Log-probability of each sentence under a hierarchical-softmax model (gensim's ``score``).

    Skip-gram scores every (word, context word) pair within ``window`` (no reduced windows); CBOW scores
    every word given the mean (or sum) of its context.  Unknown words are left out, as in training.
    ``offsets, points, codes`` are the Huffman paths of the vocabulary (``huffman_paths``).

    Returns
    -------
    ndarray of float32
        One score per sentence (at most ``total_sentences``).
    """
    scores = []
    for n, sentence in enumerate(sentences):
        if total_sentences is not None and n >= total_sentences:
            break
        ids = [key_to_index[w] for w in sentence if w in key_to_index]
        total = 0.0
        for pos, word in enumerate(ids):
            nodes = W_out[points[offsets[word]:offsets[word + 1]]].astype(np.float64)
            sign = 1.0 - 2.0 * codes[offsets[word]:offsets[word + 1]]
            lo, hi = max(0, pos - window), min(len(ids), pos + window + 1)
            context = [ids[j] for j in range(lo, hi) if j != pos]
            if not context:
                continue
            if sg:
                h = W_in[context].astype(np.float64)                      # one row per context word
            else:
                h = W_in[context].sum(axis=0, dtype=np.float64)
                h = (h / len(context) if cbow_mean else h)[None, :]
            total -= np.logaddexp(0.0, -(h @ nodes.T) * sign).sum()
        scores.append(total)
    return np.asarray(scores, dtype=np.float32)
