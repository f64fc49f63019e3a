"""An mkdocs hook (mkdocs.yml `hooks`): the site's code font is DejaVu Sans Mono, copied at
build time from matplotlib's package data (a dependency of the harness) into the built site,
never into the repository. One font with every box-drawing character keeps the terminal
tables straight, and the site read offline has it too."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

FONTS = ("DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf")
"""The faces the stylesheet declares (docs/assets/extra.css, `@font-face`)."""
TARGET = "assets/fonts"
"""Where they go in the built site, as the stylesheet names them."""


def on_post_build(config: Any, **kwargs: Any) -> None:
    import matplotlib

    source = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    target = Path(config["site_dir"]) / TARGET
    target.mkdir(parents=True, exist_ok=True)
    for name in FONTS:
        shutil.copyfile(source / name, target / name)
