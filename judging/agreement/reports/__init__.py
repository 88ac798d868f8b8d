"""Agreement reports: one comparison of two judges, a run ranking under two judges, a whole campaign,
and the live view of assessors, as dicts (the JSON shape), text, CSV and charts.

Reads go through `judging.agreement.selectors`, figures through `judging.measures.agreement`; this package only puts
them together (`comparison`, `campaign`) and shows them (`text` for text and CSV, `charts`).
"""

from judging.agreement.reports.campaign import campaign_report, live_agreement
from judging.agreement.reports.charts import confusion_heatmap, data_uri, ranking_scatter
from judging.agreement.reports.comparison import (
    comparison_report,
    confusion_rows,
    measures_for_task,
    rank_report,
)
from judging.agreement.reports.text import comparison_csv, comparison_text, confusion_csv, rank_csv, rank_text

__all__ = [
    "campaign_report",
    "comparison_csv",
    "comparison_report",
    "comparison_text",
    "confusion_csv",
    "confusion_heatmap",
    "confusion_rows",
    "data_uri",
    "live_agreement",
    "measures_for_task",
    "rank_csv",
    "rank_report",
    "rank_text",
    "ranking_scatter",
]
