"""A real photograph for the image tests: one of the sample images scikit-learn ships."""

from __future__ import annotations

from pathlib import Path

import sklearn

CHINA = Path(sklearn.__file__).parent / "datasets" / "images" / "china.jpg"
