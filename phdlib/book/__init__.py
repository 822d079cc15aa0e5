"""The book driver (below the command line only): chapters in, a site out.

:mod:`~phdlib.book.driver` executes every chapter with papermill and caches
it, :mod:`~phdlib.book.heartbeat` showing a long one's progress;
:mod:`~phdlib.book.params` reads and checks a chapter's ``parameters`` cell;
:mod:`~phdlib.book.companions` settles the real datasets the chapters read
besides the build's own; :mod:`~phdlib.book.project` knows the book's files
(``_toc.yml``, the chapters); :mod:`~phdlib.book.site` builds the Jupyter
Book site from the executed chapters and :mod:`~phdlib.book.offline` makes
it work offline.
``from phdlib import book`` reads as before.
"""
from .driver import (HEARTBEAT_SECONDS, ChapterError, ChapterNotBuilt, ChapterResult, build,
                     execute_chapter)
from .params import check_parameters, declared_parameters, used_parameters
from .project import chapters, is_notebook, project_root, toc_files
from .site import SYNTHETIC_BANNER, SiteBuildError, build_site

__all__ = ["HEARTBEAT_SECONDS", "ChapterError", "ChapterNotBuilt", "ChapterResult", "build",
           "execute_chapter", "check_parameters", "declared_parameters", "used_parameters",
           "chapters", "is_notebook", "project_root", "toc_files", "SYNTHETIC_BANNER",
           "SiteBuildError", "build_site"]
