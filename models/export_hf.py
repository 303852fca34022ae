"""The HuggingFace part of the zoo: small configurations of eight
`transformers` architectures, randomly initialised (no downloads), each
wrapped so that its forward takes tensors and returns one tensor, for
models/export_models.py to export with torch.onnx at opset 17 and
onnxruntime to give reference outputs.

Sizes are kept small (hidden 64, two layers, vocabulary 1000, sequence 32)
so the e2e tier runs them on the host executor and the CUDA simulator in
seconds; what they exercise is the exporters' patterns, not scale: BERT and
RoBERTa's extended attention mask (RoBERTa's position ids through CumSum),
GPT-2's Conv1D and causal mask, DeBERTa-v2's disentangled attention
(GatherElements along the scores' last axis), T5's relative position buckets and its
decoder's cross attention, Whisper's convolutional front end, LLaMA's
rotary embedding, RMSNorm, grouped-query attention and the attention mask
it builds, and Swin's shifted windows and their mask.
transformers is pinned in tools/requirements.txt (4.40.2, which supports
Debian's torch 1.13).
"""
SEQ = 32
VOCAB = 1000
# A padded sequence: the attention masks end in PAD zeros, so masking is
# exercised, not a no-op.
PAD = 4


def _ids(seq=SEQ, low=0):
    import torch
    return torch.randint(low, VOCAB, (1, seq))


def _mask():
    import torch
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    mask[0, SEQ - PAD:] = 0
    return mask


def _masked_text(low=0):
    """The inputs of an encoder or decoder fed a padded sequence: ids (all
    at least `low`) and their attention mask."""
    return [("input_ids", _ids(low=low), {}), ("attention_mask", _mask(), {})]


def _field(model, names, field, **fixed):
    """`model` wrapped so its forward takes the tensors `names` in order
    (and the keyword arguments `fixed`) and returns one field of its output
    (last_hidden_state, logits)."""
    import torch.nn as nn

    class Field(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            out = self.model(**dict(zip(names, tensors)), **fixed)
            return getattr(out, field)

    return Field()


def build_hf_bert():
    from transformers import BertConfig, BertModel
    config = BertConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=128,
                        max_position_embeddings=64)
    names = ["input_ids", "attention_mask"]
    return (_field(BertModel(config), names, "last_hidden_state"),
            _masked_text(),
            ["last_hidden_state"])


def build_hf_roberta():
    from transformers import RobertaConfig, RobertaModel
    # Position ids are a running sum of the non-padding tokens (CumSum on
    # runtime data) offset by the padding id 1; ids stay above it.
    config = RobertaConfig(vocab_size=VOCAB, hidden_size=64,
                           num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=128,
                           max_position_embeddings=SEQ + 8)
    names = ["input_ids", "attention_mask"]
    return (_field(RobertaModel(config), names, "last_hidden_state"),
            _masked_text(low=3),
            ["last_hidden_state"])


def build_hf_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4,
                        n_positions=64)
    names = ["input_ids", "attention_mask"]
    return (_field(GPT2LMHeadModel(config), names, "logits", use_cache=False),
            _masked_text(),
            ["logits"])


def build_hf_deberta():
    from transformers import DebertaV2Config, DebertaV2Model
    # Disentangled attention: content-to-position and position-to-content
    # scores gathered along the last axis (GatherElements on runtime scores
    # with indices from the relative-position buckets).
    config = DebertaV2Config(vocab_size=VOCAB, hidden_size=64,
                             num_hidden_layers=2, num_attention_heads=4,
                             intermediate_size=128,
                             max_position_embeddings=64,
                             relative_attention=True, position_buckets=16,
                             pos_att_type=["p2c", "c2p"],
                             max_relative_positions=32)
    names = ["input_ids", "attention_mask"]
    return (_field(DebertaV2Model(config), names, "last_hidden_state"),
            _masked_text(),
            ["last_hidden_state"])


def build_hf_t5():
    from transformers import T5Config, T5Model
    config = T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128,
                      num_layers=2, num_decoder_layers=2, num_heads=4)
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    return (_field(T5Model(config), names, "last_hidden_state",
                   use_cache=False),
            _masked_text() + [("decoder_input_ids", _ids(seq=8), {})],
            ["last_hidden_state"])


def build_hf_whisper_encoder():
    import torch
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder
    # 16 mel bins over 64 frames; the stride-2 conv halves them to the 32
    # source positions.
    config = WhisperConfig(vocab_size=VOCAB, d_model=64, encoder_layers=2,
                           encoder_attention_heads=4, encoder_ffn_dim=128,
                           num_mel_bins=16, max_source_positions=32)
    return (_field(WhisperEncoder(config), ["input_features"],
                   "last_hidden_state"),
            [("input_features", torch.randn(1, 16, 64), {})],
            ["last_hidden_state"])


def build_hf_llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64,
                         intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64)
    names = ["input_ids", "attention_mask"]
    return (_field(LlamaForCausalLM(config), names, "logits",
                   use_cache=False),
            _masked_text(),
            ["logits"])


def build_hf_swin():
    import torch
    from transformers import SwinConfig, SwinModel
    # 64x64 in patches of 4: a 16x16 grid, windows of 4, two stages (the
    # second shifted and merged).
    config = SwinConfig(image_size=64, patch_size=4, num_channels=3,
                        embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                        window_size=4)
    return (_field(SwinModel(config), ["pixel_values"], "last_hidden_state"),
            [("pixel_values", torch.randn(1, 3, 64, 64), {})],
            ["last_hidden_state"])


def hf_models():
    """Names and builders, as models/zoo.json lists them."""
    return {
        "hf_bert": build_hf_bert,
        "hf_roberta": build_hf_roberta,
        "hf_gpt2": build_hf_gpt2,
        "hf_deberta": build_hf_deberta,
        "hf_t5": build_hf_t5,
        "hf_whisper_encoder": build_hf_whisper_encoder,
        "hf_llama": build_hf_llama,
        "hf_swin": build_hf_swin,
    }
