"""Tiny, randomly initialised vision-language models for tests of the ``hf`` backend and ``dtc``.

Nothing here touches the Hugging Face hub: each model is built from a config (a few layers, hidden size 32),
its processor is assembled from local parts (an image processor class with small sizes, a byte-level BPE
tokenizer trained in-process on a few sentences, a chat template string), and everything is saved to a
directory so that tests load it through the real ``HFModel.from_spec(path)`` code path, exactly as a user's
hub checkpoint would be loaded.

Two families, because they differ where backends usually break: LLaVA-1.5 (CLIP vision tower, a fixed number
of ``<image>`` tokens, Llama decoder) and Qwen2-VL (native-resolution patches, ``<|image_pad|>`` tokens whose
count depends on the image size, multimodal rotary positions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Words the tokenizer must know as whole tokens, so that answer options map to real single tokens the way
# they do in real vocabularies ("yes", " yes", "Yes", " Yes", "A" ...).
_CORPUS = [
    "Is the cat on the mat in this photo? Please answer yes or no. Yes, it is. No, it is not.",
    "yes no Yes No YES NO yes. no. Yes. No. yes, no,",
    "What is the relation between the dog and the ball? A. on B. under C. behind D. near, please choose.",
    "A B C D A. B. C. D. The answer is A. The answer is B. The answer is C. The answer is D.",
    "USER: ASSISTANT: user assistant system describe the image in one sentence.",
    "The man is riding a horse next to the tree. A woman holds an umbrella near the car.",
    "There are two people, a red bus and a small white dog sitting under a wooden table.",
]

LLAVA_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}USER: {% else %}ASSISTANT: {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>\n{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% if message['role'] == 'user' %} {% else %}</s>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)

QWEN2VL_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tokenizer(special_tokens: list[str], *, bos: str, eos: str, pad: str, vocab_size: int = 400) -> Any:
    """A byte-level BPE tokenizer trained on a few sentences, wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS * 3, trainer=trainer)
    extra = [t for t in special_tokens if t not in (bos, eos, pad)]
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        extra_special_tokens=extra,
        padding_side="left",
    )


def build_tiny_llava(directory: Path, *, seed: int = 0, layers: int = 3) -> Path:
    """A LLaVA-1.5-style model (28 px CLIP tower, 4 image tokens, Llama decoder) saved to ``directory``."""
    import torch
    from transformers import (
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )
    from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil

    tokenizer = build_tokenizer(
        ["<unk>", "<s>", "</s>", "<pad>", "<image>"], bos="<s>", eos="</s>", pad="<pad>"
    )
    image_size, patch = 28, 14
    image_processor = LlavaImageProcessorPil(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_TEMPLATE,
    )
    text_config = _llama_text_config(tokenizer, layers)
    vision_config = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch,
        projection_dim=32,
    )
    config = LlavaConfig(
        vision_config=vision_config,
        text_config=text_config,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_seq_length=(image_size // patch) ** 2,
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    _sharpen(model)
    _save(model, processor, tokenizer, directory)
    return directory


def build_tiny_llava_next(directory: Path, *, seed: int = 0, layers: int = 3) -> Path:
    """A LLaVA-NeXT-style model (any-resolution tiles of a 28 px CLIP tower) saved to ``directory``."""
    import torch
    from transformers import (
        CLIPVisionConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextProcessor,
    )
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    tokenizer = build_tokenizer(
        ["<unk>", "<s>", "</s>", "<pad>", "<image>"], bos="<s>", eos="</s>", pad="<pad>"
    )
    image_size, patch = 28, 14
    pinpoints = [[28, 28], [28, 56], [56, 28]]
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": image_size},
        crop_size={"height": image_size, "width": image_size},
        image_grid_pinpoints=pinpoints,
    )
    processor = LlavaNextProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=LLAVA_TEMPLATE,
    )
    config = LlavaNextConfig(
        vision_config=CLIPVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=2,
            image_size=image_size,
            patch_size=patch,
            projection_dim=32,
        ),
        text_config=_llama_text_config(tokenizer, layers),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default",
        vision_feature_layer=-2,
        image_grid_pinpoints=pinpoints,
        image_seq_length=(image_size // patch) ** 2,
    )
    torch.manual_seed(seed)
    model = LlavaNextForConditionalGeneration(config).eval()
    _sharpen(model)
    _save(model, processor, tokenizer, directory)
    return directory


def _llama_text_config(tokenizer: Any, layers: int) -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def build_tiny_qwen2vl(directory: Path, *, seed: int = 0, layers: int = 3) -> Path:
    """A Qwen2-VL-style model (14 px patches merged 2×2, multimodal rotary positions) saved to ``directory``.

    The model, tokenizer and image processor are saved; the processor itself is not, because transformers 5
    builds Qwen2-VL's processor with a video processor that needs torchvision, which this CPU-only environment
    lacks. :func:`qwen2vl_image_processor` assembles an image-only processor from the saved parts instead.
    """
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tokenizer = build_tokenizer(_QWEN_SPECIALS, bos="<|im_start|>", eos="<|im_end|>", pad="<|endoftext|>")
    tokenizer.chat_template = QWEN2VL_TEMPLATE
    ids = tokenizer.convert_tokens_to_ids
    config = Qwen2VLConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": layers,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "max_position_embeddings": 512,
            "rope_parameters": {"rope_type": "default", "mrope_section": [2, 1, 1], "rope_theta": 10000.0},
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
        },
        vision_config={
            "depth": 2,
            "embed_dim": 32,
            "hidden_size": 32,
            "num_heads": 2,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
    )
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config).eval()
    _sharpen(model)
    _save(model, None, tokenizer, directory)
    tokenizer.save_pretrained(directory)
    _qwen_image_processor().save_pretrained(directory)
    return directory


_QWEN_SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]


def _qwen_image_processor() -> Any:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(min_pixels=28 * 28, max_pixels=56 * 56, patch_size=14, merge_size=2)


def qwen2vl_image_processor(directory: Path) -> Any:
    """Qwen2-VL's processor for images only, from the tokenizer and image processor saved in ``directory``.

    transformers checks every sub-processor's class, and without torchvision the video processor's base class
    does not exist; this subclass lets ``video_processor`` be absent. Videos are never used by halluscope.
    """
    from transformers import AutoTokenizer, Qwen2VLProcessor
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    class ImageOnlyQwen2VLProcessor(Qwen2VLProcessor):
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name == "video_processor" and argument is None:
                return None
            return super().check_argument_for_proper_class(argument_name, argument)

    tokenizer = AutoTokenizer.from_pretrained(directory)
    image_processor = Qwen2VLImageProcessorPil.from_pretrained(directory)
    return ImageOnlyQwen2VLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=None,
        chat_template=QWEN2VL_TEMPLATE,
    )


def _sharpen(model: Any) -> None:
    """Scale the output head so a random model has peaked next-token distributions.

    With initializer_range 0.02 and hidden size 32, every logit is ~0, so greedy argmax is decided by noise
    at the 1e-6 level and batched vs single runs could differ by float reordering alone. A larger head makes
    decisions clear-cut while staying random.
    """
    import torch

    head = model.get_output_embeddings()
    with torch.no_grad():
        head.weight.normal_(0.0, 1.0)


def _save(model: Any, processor: Any | None, tokenizer: Any, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.save_pretrained(directory)
    if processor is not None:
        processor.save_pretrained(directory)


def draw_image(path: Path, *, size: int = 48, seed: int = 0) -> Path:
    """A small Pillow-drawn scene (coloured shapes on a background) saved as PNG."""
    import random

    from PIL import Image, ImageDraw

    rng = random.Random(seed)
    image = Image.new("RGB", (size, size), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(4):
        x0, y0 = rng.randrange(size // 2), rng.randrange(size // 2)
        x1, y1 = x0 + rng.randrange(4, size // 2), y0 + rng.randrange(4, size // 2)
        draw.rectangle((x0, y0, x1, y1), fill=tuple(rng.randrange(256) for _ in range(3)))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path


def photo_image(path: Path, *, size: int = 56) -> Path:
    """A real photograph (scikit-image's astronaut), shrunk to ``size`` px and saved as JPEG."""
    from PIL import Image
    from skimage import data

    image = Image.fromarray(data.astronaut()).resize((size, size))
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path)
    return path
