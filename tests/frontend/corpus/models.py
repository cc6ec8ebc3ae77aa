"""A corpus of real architectures from ``transformers``, built from small configs (random weights,
no downloads), for checking that Cuvil compiles the models people bring.

Each :class:`Entry` builds an eval-mode model and example inputs from a seed: ``inputs(seed)``
gives fresh positional and keyword inputs of the same shapes, so a test can compare against eager
on the example input and on new data. LayerNorm/BatchNorm/RMSNorm parameters and running
statistics are randomized (``randomize_norms``) so that folding bugs cannot hide behind the
identity initialization.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import transformers as tf
from torch import nn

Inputs = tuple[tuple[torch.Tensor, ...], dict[str, torch.Tensor]]

VOCAB = 128
SEQ = 8
HIDDEN = 32
LAYERS = 2
HEADS = 4
FFN = 64
IMAGE = 32


@dataclass(frozen=True)
class Entry:
    name: str
    family: str  # encoder | decoder | seq2seq | vision | audio
    config: Callable[[], Any]
    model_class: Any
    inputs: Callable[[int], Inputs]
    notes: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)

    def build(self) -> nn.Module:
        torch.manual_seed(0)
        model = self.model_class(self.config())
        model.eval()
        randomize_norms(model)
        return model


def randomize_norms(model: nn.Module, seed: int = 1) -> None:
    """Give every normalization layer non-trivial affine parameters and running statistics."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            name = type(m).__name__.lower()
            if not any(k in name for k in ("norm", "batchnorm")):
                continue
            for pname in ("weight", "bias"):
                p = getattr(m, pname, None)
                if isinstance(p, torch.Tensor) and p.is_floating_point():
                    base = 1.0 if pname == "weight" else 0.0
                    p.copy_(base + 0.2 * torch.randn(p.shape, generator=gen))
            for bname in ("running_mean", "running_var"):
                b = getattr(m, bname, None)
                if isinstance(b, torch.Tensor):
                    noise = torch.rand(b.shape, generator=gen)
                    b.copy_(0.5 + noise if bname == "running_var" else noise - 0.5)


def _ids(seed: int, batch: int = 2, seq: int = SEQ) -> torch.Tensor:
    return torch.randint(3, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(seed))


def _mask(seed: int, batch: int = 2, seq: int = SEQ) -> torch.Tensor:
    """An attention mask with padding at the end of the second row (length depends on seed)."""
    mask = torch.ones(batch, seq, dtype=torch.long)
    mask[-1, seq - 2 - seed % 3 :] = 0
    return mask


def text(seed: int) -> Inputs:
    return (_ids(seed),), {}


def text_masked(seed: int) -> Inputs:
    return (_ids(seed),), {"attention_mask": _mask(seed)}


def seq2seq(seed: int) -> Inputs:
    return (_ids(seed),), {"decoder_input_ids": _ids(seed + 100, seq=SEQ // 2)}


def image(seed: int, size: int = IMAGE, channels: int = 3) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(2, channels, size, size, generator=gen),), {}


def audio(seed: int, samples: int = 1600) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(2, samples, generator=gen),), {}


def features(seed: int, bins: int = 16, frames: int = 32) -> Inputs:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(2, bins, frames, generator=gen),), {}


_T: dict[str, Any] = dict(
    vocab_size=VOCAB,
    hidden_size=HIDDEN,
    num_hidden_layers=LAYERS,
    num_attention_heads=HEADS,
    intermediate_size=FFN,
    max_position_embeddings=64,
)
_TOKENS = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
#: decoders run a whole sequence without a KV cache (``use_cache=False``: no DynamicCache output)
_DEC = dict(_T, num_key_value_heads=2, head_dim=HIDDEN // HEADS, use_cache=False, **_TOKENS)
_V = dict(
    image_size=IMAGE,
    patch_size=8,
    hidden_size=HIDDEN,
    num_hidden_layers=LAYERS,
    num_attention_heads=HEADS,
    intermediate_size=FFN,
)


def _cfg(cls: Any, **kw: Any) -> Callable[[], Any]:
    return lambda: cls(**kw)


ENTRIES: list[Entry] = [
    # ---- encoders
    Entry("bert", "encoder", _cfg(tf.BertConfig, **_T), tf.BertModel, text),
    Entry("bert-masked", "encoder", _cfg(tf.BertConfig, **_T), tf.BertModel, text_masked),
    Entry("roberta", "encoder", _cfg(tf.RobertaConfig, **_T), tf.RobertaModel, text_masked),
    Entry(
        "distilbert",
        "encoder",
        _cfg(
            tf.DistilBertConfig,
            vocab_size=VOCAB,
            dim=HIDDEN,
            n_layers=LAYERS,
            n_heads=HEADS,
            hidden_dim=FFN,
            max_position_embeddings=64,
        ),
        tf.DistilBertModel,
        text_masked,
    ),
    Entry(
        "albert",
        "encoder",
        _cfg(tf.AlbertConfig, embedding_size=16, **_T),
        tf.AlbertModel,
        text_masked,
    ),
    Entry(
        "electra",
        "encoder",
        _cfg(tf.ElectraConfig, embedding_size=16, **_T),
        tf.ElectraModel,
        text_masked,
    ),
    Entry("deberta-v2", "encoder", _cfg(tf.DebertaV2Config, **_T), tf.DebertaV2Model, text_masked),
    Entry("mpnet", "encoder", _cfg(tf.MPNetConfig, **_T), tf.MPNetModel, text_masked),
    Entry("xlm-roberta", "encoder", _cfg(tf.XLMRobertaConfig, **_T), tf.XLMRobertaModel, text),
    Entry(
        "mobilebert",
        "encoder",
        _cfg(
            tf.MobileBertConfig,
            embedding_size=16,
            intra_bottleneck_size=16,
            true_hidden_size=16,
            num_feedforward_networks=2,
            **_T,
        ),
        tf.MobileBertModel,
        text_masked,
    ),
    # ---- decoders (causal masks, RoPE, GQA)
    Entry(
        "gpt2",
        "decoder",
        _cfg(
            tf.GPT2Config,
            vocab_size=VOCAB,
            n_embd=HIDDEN,
            n_layer=LAYERS,
            n_head=HEADS,
            n_positions=64,
            use_cache=False,
            **_TOKENS,
        ),
        tf.GPT2Model,
        text,
    ),
    Entry(
        "gpt-neo",
        "decoder",
        _cfg(
            tf.GPTNeoConfig,
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            num_layers=LAYERS,
            num_heads=HEADS,
            attention_types=[[["global", "local"], 1]],
            window_size=4,
            max_position_embeddings=64,
            intermediate_size=FFN,
            use_cache=False,
            **_TOKENS,
        ),
        tf.GPTNeoModel,
        text,
    ),
    Entry(
        "opt",
        "decoder",
        _cfg(
            tf.OPTConfig,
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            ffn_dim=FFN,
            word_embed_proj_dim=HIDDEN,
            max_position_embeddings=64,
            use_cache=False,
            **_TOKENS,
        ),
        tf.OPTModel,
        text_masked,
    ),
    Entry("llama", "decoder", _cfg(tf.LlamaConfig, **_DEC), tf.LlamaModel, text),
    Entry("llama-masked", "decoder", _cfg(tf.LlamaConfig, **_DEC), tf.LlamaModel, text_masked),
    Entry("mistral", "decoder", _cfg(tf.MistralConfig, **_DEC), tf.MistralModel, text),
    Entry("qwen2", "decoder", _cfg(tf.Qwen2Config, **_DEC), tf.Qwen2Model, text),
    Entry("qwen3", "decoder", _cfg(tf.Qwen3Config, **_DEC), tf.Qwen3Model, text),
    Entry(
        "phi", "decoder", _cfg(tf.PhiConfig, use_cache=False, **_TOKENS, **_T), tf.PhiModel, text
    ),
    Entry("phi3", "decoder", _cfg(tf.Phi3Config, **_DEC), tf.Phi3Model, text),
    Entry("gemma", "decoder", _cfg(tf.GemmaConfig, **_DEC), tf.GemmaModel, text),
    Entry("gemma2", "decoder", _cfg(tf.Gemma2Config, **_DEC), tf.Gemma2Model, text),
    Entry(
        "falcon",
        "decoder",
        _cfg(
            tf.FalconConfig,
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            use_cache=False,
            **_TOKENS,
        ),
        tf.FalconModel,
        text,
    ),
    Entry(
        "bloom",
        "decoder",
        _cfg(
            tf.BloomConfig,
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            n_layer=LAYERS,
            n_head=HEADS,
            use_cache=False,
            **_TOKENS,
        ),
        tf.BloomModel,
        text_masked,
    ),
    Entry("stablelm", "decoder", _cfg(tf.StableLmConfig, **_DEC), tf.StableLmModel, text),
    Entry("olmo", "decoder", _cfg(tf.OlmoConfig, **_DEC), tf.OlmoModel, text),
    # ---- seq2seq
    Entry(
        "t5",
        "seq2seq",
        _cfg(
            tf.T5Config,
            vocab_size=VOCAB,
            d_model=HIDDEN,
            d_kv=8,
            d_ff=FFN,
            num_layers=LAYERS,
            num_heads=HEADS,
            decoder_start_token_id=0,
            use_cache=False,
            pad_token_id=0,
            eos_token_id=1,
        ),
        tf.T5Model,
        seq2seq,
    ),
    Entry(
        "bart",
        "seq2seq",
        _cfg(
            tf.BartConfig,
            vocab_size=VOCAB,
            d_model=HIDDEN,
            encoder_layers=LAYERS,
            decoder_layers=LAYERS,
            encoder_attention_heads=HEADS,
            decoder_attention_heads=HEADS,
            encoder_ffn_dim=FFN,
            decoder_ffn_dim=FFN,
            max_position_embeddings=64,
            use_cache=False,
            **_TOKENS,
        ),
        tf.BartModel,
        seq2seq,
    ),
    Entry(
        "marian",
        "seq2seq",
        _cfg(
            tf.MarianConfig,
            vocab_size=VOCAB,
            d_model=HIDDEN,
            encoder_layers=LAYERS,
            decoder_layers=LAYERS,
            encoder_attention_heads=HEADS,
            decoder_attention_heads=HEADS,
            encoder_ffn_dim=FFN,
            decoder_ffn_dim=FFN,
            max_position_embeddings=64,
            pad_token_id=1,
            decoder_start_token_id=1,
            eos_token_id=0,
            use_cache=False,
        ),
        tf.MarianModel,
        seq2seq,
    ),
    # ---- vision
    Entry("vit", "vision", _cfg(tf.ViTConfig, **_V), tf.ViTModel, image),
    Entry("deit", "vision", _cfg(tf.DeiTConfig, **_V), tf.DeiTModel, image),
    Entry(
        "beit",
        "vision",
        _cfg(tf.BeitConfig, use_relative_position_bias=True, **_V),
        tf.BeitModel,
        image,
    ),
    Entry("dinov2", "vision", _cfg(tf.Dinov2Config, **_V), tf.Dinov2Model, image),
    Entry(
        "swin",
        "vision",
        _cfg(
            tf.SwinConfig,
            image_size=IMAGE,
            patch_size=4,
            embed_dim=16,
            depths=[1, 1],
            num_heads=[2, 4],
            window_size=4,
        ),
        tf.SwinModel,
        image,
    ),
    Entry(
        "convnext",
        "vision",
        _cfg(tf.ConvNextConfig, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2),
        tf.ConvNextModel,
        image,
    ),
    Entry(
        "resnet",
        "vision",
        _cfg(tf.ResNetConfig, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1]),
        tf.ResNetModel,
        image,
    ),
    Entry(
        "regnet",
        "vision",
        _cfg(
            tf.RegNetConfig, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], groups_width=4
        ),
        tf.RegNetModel,
        image,
    ),
    Entry(
        "mobilevit",
        "vision",
        _cfg(
            tf.MobileViTConfig,
            image_size=IMAGE,
            hidden_sizes=[16, 24, 32],
            neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 48],
        ),
        tf.MobileViTModel,
        image,
    ),
    Entry(
        "segformer",
        "vision",
        _cfg(
            tf.SegformerConfig,
            num_encoder_blocks=2,
            depths=[1, 1],
            sr_ratios=[2, 1],
            hidden_sizes=[8, 16],
            num_attention_heads=[1, 2],
            patch_sizes=[7, 3],
            strides=[4, 2],
            mlp_ratios=[2, 2],
        ),
        tf.SegformerModel,
        image,
    ),
    Entry(
        "clip-vision",
        "vision",
        _cfg(tf.CLIPVisionConfig, **_V),
        tf.CLIPVisionModel,
        image,
    ),
    # ---- audio
    Entry(
        "wav2vec2",
        "audio",
        _cfg(
            tf.Wav2Vec2Config,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=FFN,
            conv_dim=(8, 8),
            conv_stride=(5, 4),
            conv_kernel=(10, 4),
            num_conv_pos_embeddings=4,
            num_conv_pos_embedding_groups=2,
        ),
        tf.Wav2Vec2Model,
        lambda seed: audio(seed, 400),
    ),
    Entry(
        "hubert",
        "audio",
        _cfg(
            tf.HubertConfig,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=FFN,
            conv_dim=(8, 8),
            conv_stride=(5, 4),
            conv_kernel=(10, 4),
            num_conv_pos_embeddings=4,
            num_conv_pos_embedding_groups=2,
        ),
        tf.HubertModel,
        lambda seed: audio(seed, 400),
    ),
    Entry(
        "whisper-encoder",
        "audio",
        _cfg(
            tf.WhisperConfig,
            vocab_size=VOCAB,
            d_model=HIDDEN,
            encoder_layers=LAYERS,
            decoder_layers=LAYERS,
            encoder_attention_heads=HEADS,
            decoder_attention_heads=HEADS,
            encoder_ffn_dim=FFN,
            decoder_ffn_dim=FFN,
            num_mel_bins=16,
            max_source_positions=16,
            use_cache=False,
            pad_token_id=0,
            bos_token_id=1,
            eos_token_id=2,
            decoder_start_token_id=1,
        ),
        lambda cfg: tf.WhisperModel(cfg).get_encoder(),
        lambda seed: features(seed, 16, 32),
    ),
    Entry(
        "ast",
        "audio",
        _cfg(
            tf.ASTConfig,
            hidden_size=HIDDEN,
            num_hidden_layers=LAYERS,
            num_attention_heads=HEADS,
            intermediate_size=FFN,
            num_mel_bins=16,
            max_length=32,
            patch_size=8,
            frequency_stride=8,
            time_stride=8,
        ),
        tf.ASTModel,
        lambda seed: ((torch.randn(2, 32, 16, generator=torch.Generator().manual_seed(seed)),), {}),
    ),
]

BY_NAME = {e.name: e for e in ENTRIES}
