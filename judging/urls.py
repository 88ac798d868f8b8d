from django.urls import include, path

from judging.agreement import urls as agreement_urls
from judging.evaluation import urls as evaluation_urls
from judging.hybrid import urls as hybrid_urls
from judging.machine import urls as machine_urls
from judging.quality import urls as quality_urls
from judging.quality.judges import urls as judges_urls
from judging.quality.runs import urls as run_report_urls
from judging.rag_nuggets import urls as rag_nugget_urls
from judging.rag_nuggets.calibration import urls as calibration_urls
from judging.reports import urls as report_urls
from judging.views import evaluation_runs

# One namespace for the app: each feature lists its own pages, included here without a namespace of its own.
app_name = "judging"
urlpatterns: list = [
    path("evaluation/", include(evaluation_urls.urlpatterns)),
    path("evaluation/<slug:name>/", evaluation_runs, name="evaluation-runs"),
    path("evaluation/", include(rag_nugget_urls.urlpatterns)),
    path("evaluation/<slug:name>/hybrid/", include(hybrid_urls.urlpatterns)),
    path("agreement/", include(agreement_urls.urlpatterns)),
    path("agreement/", include(calibration_urls.urlpatterns)),
    path("jobs/", include(machine_urls.urlpatterns)),
    path("quality/", include(judges_urls.urlpatterns)),
    path("quality/", include(run_report_urls.urlpatterns)),
    path("quality/", include(quality_urls.urlpatterns)),
    path("reports/", include(report_urls.urlpatterns)),
]
