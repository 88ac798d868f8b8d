import os

from django.core.wsgi import get_wsgi_application

from core.lazy_views import views_load_all

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
application = get_wsgi_application()
# The URL conf names its views without importing them, for the commands' sake (core/lazy_views.py); a web
# server imports them all now, at its start, so that no request waits on an import.
views_load_all()
