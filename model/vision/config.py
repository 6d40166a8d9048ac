"""Shapes of the two vision Transformers, frozen and validated, stored in each checkpoint's config.json."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Self

from model.network.config import known_keys, require_dropout, require_positive_ints

N_CLASSES = 10


class _JsonConfig:
    """config.json's object and back, the same for both vision configs."""

    if TYPE_CHECKING:  # both subclasses are dataclasses, so dataclasses.asdict() takes self
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Rebuild from JSON, naming unknown keys; JSON lists become the tuples the dataclass holds."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in known_keys(cls, data).items()})


@dataclass(frozen=True)
class ViTConfig(_JsonConfig):
    """A Vision Transformer: the image cut into patch_size x patch_size patches, one token each, plus [CLS].

    Defaults fit the 8x8 digits: 2x2 patches give a 4x4 grid of 16 tokens (17 with [CLS]), about a sentence.
    """

    image_size: int = 8
    patch_size: int = 2
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 128
    dropout: float = 0.1
    n_classes: int = N_CLASSES

    def __post_init__(self) -> None:
        require_positive_ints("ViTConfig", image_size=self.image_size, patch_size=self.patch_size,
                              d_model=self.d_model, n_heads=self.n_heads, n_layers=self.n_layers, d_ff=self.d_ff,
                              n_classes=self.n_classes)
        if self.image_size % self.patch_size:
            raise ValueError(f"patch_size ({self.patch_size}) must divide image_size ({self.image_size})")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_heads ({self.n_heads})")
        require_dropout(self.dropout)

    @property
    def grid(self) -> int:
        """Patches per side."""
        return self.image_size // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid ** 2


@dataclass(frozen=True)
class SwinConfig(_JsonConfig):
    """A Swin Transformer: attention inside window x window windows, shifted by window // 2 every second block,
    and 2x2 patch merging between stages (resolution halves, width doubles).

    Defaults fit the 8x8 digits: upsampled (bilinear) to 16x16 and cut into 2x2 patches, each token stands for
    one pixel and the slope of the ink around it; stage 1 is an 8x8 grid in four 4x4 windows, shifted by 2;
    stage 2 merges to 4x4 tokens, one window. (Without upsampling a token would be a single ink count.)
    """

    image_size: int = 8
    upsample: int = 2  # bilinear factor applied before cutting patches
    patch_size: int = 2
    d_model: int = 32  # stage 1; doubles at each merge
    depths: tuple[int, ...] = (2, 2)
    heads: tuple[int, ...] = (2, 4)
    window: int = 4
    mlp_ratio: int = 2
    dropout: float = 0.1
    n_classes: int = N_CLASSES

    def __post_init__(self) -> None:
        require_positive_ints("SwinConfig", image_size=self.image_size, upsample=self.upsample,
                              patch_size=self.patch_size, d_model=self.d_model, window=self.window,
                              mlp_ratio=self.mlp_ratio, n_classes=self.n_classes)
        if not isinstance(self.depths, tuple) or not isinstance(self.heads, tuple):
            raise ValueError("depths and heads must be tuples (one entry per stage)")
        if not self.depths or len(self.depths) != len(self.heads):
            raise ValueError(f"depths {self.depths} and heads {self.heads} need one entry per stage each")
        for i, (depth, heads) in enumerate(zip(self.depths, self.heads, strict=True)):
            require_positive_ints("SwinConfig", **{f"depths[{i}]": depth, f"heads[{i}]": heads})
            if self.dims[i] % heads:
                raise ValueError(f"stage {i + 1}: width {self.dims[i]} is not divisible by {heads} heads")
        if (self.image_size * self.upsample) % self.patch_size:
            raise ValueError(f"patch_size ({self.patch_size}) must divide the upsampled image "
                             f"({self.image_size * self.upsample})")
        if self.image_size % self.resolutions[0]:
            raise ValueError(f"the first stage's {self.resolutions[0]}x{self.resolutions[0]} tokens must tile the "
                             f"{self.image_size}x{self.image_size} image")
        for i, resolution in enumerate(self.resolutions):
            if resolution % self.windows[i]:
                raise ValueError(f"stage {i + 1}: window {self.windows[i]} does not tile a {resolution}x{resolution} "
                                 "grid")
            if i + 1 < len(self.depths) and resolution % 2:
                raise ValueError(f"stage {i + 1}: an odd {resolution}x{resolution} grid cannot be merged 2x2")
        require_dropout(self.dropout)

    @property
    def n_stages(self) -> int:
        return len(self.depths)

    @property
    def resolutions(self) -> tuple[int, ...]:
        """Tokens per side at each stage."""
        first = self.image_size * self.upsample // self.patch_size
        return tuple(first // 2 ** i for i in range(self.n_stages))

    @property
    def dims(self) -> tuple[int, ...]:
        return tuple(self.d_model * 2 ** i for i in range(self.n_stages))

    @property
    def windows(self) -> tuple[int, ...]:
        """Window side per stage: a grid no larger than the window is one window (Swin's rule)."""
        return tuple(min(self.window, r) for r in self.resolutions)

    @property
    def shifts(self) -> tuple[int, ...]:
        """Shift of the odd blocks per stage: window // 2, or 0 where one window covers the grid."""
        return tuple(w // 2 if r > w else 0 for r, w in zip(self.resolutions, self.windows, strict=True))
