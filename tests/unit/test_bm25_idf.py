"""The exact-arithmetic BM25 weights: any summation order gives the same float32 bits."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from drag_knee_retriever.common._bm25_idf import EXACT_BELOW, DocumentFrequencies, idf, quantize_document


def test_sums_of_quantized_products_do_not_depend_on_the_order():
    rng = random.Random(7)
    frequencies = DocumentFrequencies()
    docs = [sorted(rng.sample(range(500), 20)) for _ in range(3000)]
    frequencies.add(docs)
    terms, weights = frequencies.query_weights(list(range(0, 500, 9)), [1.0] * 56)
    query = dict(zip(terms, weights))
    raw_orders_differ = exact_orders_differ = 0
    for doc in docs[:300]:
        raw = [rng.uniform(0.2, 2.2) for _ in doc]
        exact = quantize_document(raw)
        products = [np.float32(query[t]) * np.float32(v) for t, v in zip(doc, exact) if t in query]
        raws = [np.float32(idf(frequencies.df(t), frequencies.n)) * np.float32(v) for t, v in zip(doc, raw) if t in query]
        sums, raw_sums = set(), set()
        for _ in range(20):
            order = list(range(len(products)))
            rng.shuffle(order)
            sums.add(float(sum((products[i] for i in order), np.float32(0))))
            raw_sums.add(float(sum((raws[i] for i in order), np.float32(0))))
        assert max(sums) < EXACT_BELOW
        exact_orders_differ += len(sums) > 1
        raw_orders_differ += len(raw_sums) > 1
    assert exact_orders_differ == 0
    assert raw_orders_differ > 0  # the float32 noise the scheme removes is real


def test_frequencies_follow_writes_and_deletes():
    frequencies = DocumentFrequencies()
    frequencies.add([[1, 2, 2], [2, 3]])
    assert (frequencies.n, frequencies.df(1), frequencies.df(2), frequencies.df(3)) == (2, 1, 2, 1)
    version = frequencies.version
    frequencies.remove([[2, 3]])
    assert (frequencies.n, frequencies.df(2), frequencies.df(3)) == (1, 1, 0)
    assert frequencies.version != version
    terms, weights = frequencies.query_weights([3, 2, 1], [1.0, 1.0, 1.0])
    assert terms == [1, 2]  # ascending, the unknown term 3 dropped
    assert weights[0] == pytest.approx(idf(1, 1), abs=1 / 128) and weights[0] * 64 == int(weights[0] * 64)


def test_quantized_weights_stay_close_to_bm25():
    assert quantize_document([0.0001, 1.0, 2.19]) == [1 / 1024, 1.0, round(2.19 * 1024) / 1024]
    assert math.isclose(idf(5, 1000), math.log(1 + 995.5 / 5.5))
