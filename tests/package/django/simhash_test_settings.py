"""Django settings of the Django tests (conftest.py configures Django with
them; `django-admin makemigrations` made simhash_testapp's migration with
them).  The database's HOST, PORT and USER come from the plugin's
``simhash_django_db_settings`` fixture: the suite's server."""

DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "simhash_django"}}
INSTALLED_APPS = ["django.contrib.contenttypes", "pysimhash_sql.django", "simhash_testapp"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
SECRET_KEY = "pysimhash-sql tests"
