"""Every page of a site is made by a page maker registered through ``pdx_register_pages``, pdx's as a
plugin's (pdx.reports.site.builtin_pages), each run in its stage (pdx.contract.page.STAGES)."""

import pytest

from pdx.contract.errors import PdxError
from pdx.contract.page import STAGES, SitePage, check_page
from pdx.reports.site import pageset


def test_pdx_s_own_pages_are_registered_page_makers_in_stage_order():
    own = [(page.name, page.stage) for _, is_own, page in pageset.page_makers() if is_own]
    assert own == [("hardware", "charts"), ("models", "charts"), ("index", "charts"), ("runs", "pages"),
                   ("compare", "pages"), ("hub", "pages"), ("history", "pages"), ("sweeps", "pages")]
    assert {name for name, _ in own} - {"hub"} <= pageset.RESERVED  # no plugin page takes their names
    assert pageset.navigation() == []  # pdx's own are linked by the templates, not the plugins' navigation


def test_a_page_of_an_unknown_stage_is_refused_in_one_line():
    with pytest.raises(PdxError, match="stage 'later'; give one of charts, pages"):
        check_page(SitePage("mine", "mine", lambda site: None, stage="later"))
    assert check_page(SitePage("mine", "mine", lambda site: None)).stage == "pages" == STAGES[-1]


def test_build_pages_runs_only_the_makers_of_the_stage_asked(monkeypatch):
    made = []
    makers = [("pdx", True, SitePage("a", "a", lambda site: made.append("a"), stage="charts")),
              ("pdx", True, SitePage("b", "b", lambda site: made.append("b"))),
              ("lab", False, SitePage("c", "c", lambda site: made.append("c")))]
    monkeypatch.setattr(pageset, "page_makers", lambda: makers)

    class Site:
        runs: list = []
        listed: list = []

        def page(self, *args, **context):
            pass

    pageset.build_pages(Site(), "charts")
    assert made == ["a"]
    pageset.build_pages(Site(), "pages")
    assert made == ["a", "b", "c"]
