"""onnxruntime execution providers reach the dense encoder's ONNX session: the real offline
MiniLM on CPUExecutionProvider (listed-model and custom-model paths), the error when a provider
is missing, and a GPU run (marked ``gpu``; skipped without CUDA)."""

from __future__ import annotations

import numpy as np
import onnxruntime
import pytest

from drag_knee_retriever import EmbeddingConfig, EncoderRuntime
from drag_knee_retriever.embeddings.fastembed import FastEmbedDense
from drag_knee_retriever.errors import ModelLoadError

TEXTS = ["Spring tides follow the new and the full moon.", "Volcanic ash melts inside jet engines."]
HAS_CUDA = "CUDAExecutionProvider" in onnxruntime.get_available_providers()


@pytest.fixture(scope="module")
def cpu_default(model_path):
    return FastEmbedDense(EmbeddingConfig(model_path=model_path, runtime=EncoderRuntime(threads=1)))


def test_cpu_provider_reaches_the_session_of_a_listed_model(model_path, cpu_default):
    dense = FastEmbedDense(EmbeddingConfig(model_path=model_path, runtime=EncoderRuntime(threads=1, providers=("CPUExecutionProvider",))))
    assert dense.providers == ["CPUExecutionProvider"]
    assert np.allclose(dense.embed_passages(TEXTS), cpu_default.embed_passages(TEXTS), atol=1e-5)


def test_cpu_provider_reaches_the_session_of_a_custom_model(model_path, cpu_default):
    # A name fastembed does not list: the folder is registered as a custom model (its own path).
    dense = FastEmbedDense(EmbeddingConfig(model_name="acme/minilm-providers-test", model_path=model_path, runtime=EncoderRuntime(threads=1, providers=["CPUExecutionProvider"])))
    assert dense.providers == ["CPUExecutionProvider"]
    assert np.allclose(dense.embed_passages(TEXTS), cpu_default.embed_passages(TEXTS), atol=1e-5)


@pytest.mark.skipif(HAS_CUDA, reason="CUDA is available here")
def test_missing_provider_says_how_to_switch(model_path):
    with pytest.raises(ModelLoadError) as info:
        FastEmbedDense(EmbeddingConfig(model_path=model_path, runtime=EncoderRuntime(providers=("CUDAExecutionProvider", "CPUExecutionProvider"))))
    message = str(info.value)
    assert "CUDAExecutionProvider" in message and "onnxruntime-gpu" in message and "[gpu]" in message
    assert "Give it one of four ways" not in message  # not sent after the model's files


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs onnxruntime-gpu and a CUDA device (pip install 'drag-knee-retriever[gpu]')")
def test_gpu_run_matches_the_cpu_vectors(model_path, cpu_default):
    dense = FastEmbedDense(EmbeddingConfig(model_path=model_path, runtime=EncoderRuntime(providers=("CUDAExecutionProvider", "CPUExecutionProvider"))))
    assert dense.providers[0] == "CUDAExecutionProvider"
    cosine = np.sum(dense.embed_passages(TEXTS) * cpu_default.embed_passages(TEXTS), axis=1)
    assert np.all(cosine > 0.999)
