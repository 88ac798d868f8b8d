import os

from django.core.asgi import get_asgi_application

from core.lazy_views import views_load_all

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "assay.settings")
application = get_asgi_application()
# As in assay/wsgi.py: every view imported at the server's start, none by a request.
views_load_all()
