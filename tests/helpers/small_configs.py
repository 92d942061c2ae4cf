"""The small configurations of the trace targets: the same classes as the full ones, with few and
narrow layers. The trace-target tests and `scripts/export_small_sam3.py` share them."""

from __future__ import annotations

SAM3_SMALL = {
    "vision_config": {
        "backbone_config": {
            "model_type": "sam3_vit_model",
            "hidden_size": 64,
            "intermediate_size": 128,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": 224,
            "window_size": 8,
            "global_attn_indexes": [1],
            "pretrain_image_size": 224,
        },
        "fpn_hidden_size": 32,
        "backbone_feature_sizes": [[64, 64], [32, 32], [16, 16]],
    },
    "text_config": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "projection_dim": 64,
    },
    "geometry_encoder_config": {
        "hidden_size": 32,
        "num_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    },
    "detr_encoder_config": {
        "hidden_size": 32,
        "num_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
    },
    "detr_decoder_config": {
        "hidden_size": 32,
        "num_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "num_queries": 8,
    },
    "mask_decoder_config": {"hidden_size": 32, "num_attention_heads": 2},
}
