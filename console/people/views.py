"""The organiser's People page: accounts made with a password or by invitation, and the invitations' links,
renewed (only the newest link works) or revoked; and the welcome page an invitation's link opens."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_POST

from annotation.permissions import organiser_required
from annotation.typed import AuthenticatedRequest
from console.people.forms import LoginUnlockForm, PersonForm
from console.people.services import (
    invitation_path,
    invitation_renew,
    invitation_revoke,
    login_unlock,
    person_create,
)
from console.services import ConsoleError
from core.login_limits import is_login_allowed, lockout_response, login_failure_record, login_locks
from core.wording import plural


def _invitation_days() -> int:
    """How long a link works: Django's password-reset tokens, which the links are, last this long."""
    return max(1, settings.PASSWORD_RESET_TIMEOUT // 86400)


def _invitation_message(
    request: AuthenticatedRequest, user: User, path: tuple[str, str], *, verb: str
) -> str:
    link = request.build_absolute_uri(reverse("console-welcome", args=path))
    days = _invitation_days()
    return (
        f"{user.get_username()} is {verb}. The link works once, for {plural(days, 'day')}; "
        f"New link makes another and ends this one. Send them this one-time link: {link}"
    )


@organiser_required
def people_page(request: AuthenticatedRequest) -> HttpResponse:
    form = PersonForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            user = person_create(
                username=data["username"],
                email=data["email"],
                organiser=data["role"] == "organiser",
                password=data["password"] or None,
            )
        except ConsoleError as exc:
            form.add_error("username", str(exc))
        else:
            if data["password"]:
                messages.success(request, f"Account {user.get_username()} created.")
            else:
                path = invitation_path(user=user)
                messages.success(request, _invitation_message(request, user, path, verb="invited"))
            return redirect("console-people")
    people = get_user_model().objects.order_by("-is_staff", "username")
    return render(
        request,
        "console/people.html",
        {"form": form, "people": people, "invitation_days": _invitation_days(), "locks": login_locks()},
        status=400 if request.method == "POST" else 200,
    )


@organiser_required
@require_POST
def invitation_renew_view(request: AuthenticatedRequest, username: str) -> HttpResponse:
    user = get_object_or_404(get_user_model(), username=username)
    try:
        path = invitation_renew(user=user)
    except ConsoleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _invitation_message(request, user, path, verb="invited again"))
    return redirect("console-people")


@organiser_required
@require_POST
def invitation_revoke_view(request: AuthenticatedRequest, username: str) -> HttpResponse:
    user = get_object_or_404(get_user_model(), username=username)
    try:
        invitation_revoke(user=user)
    except ConsoleError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"{user.get_username()}'s invitation is revoked: no link of it works any more."
        )
    return redirect("console-people")


@organiser_required
@require_POST
def login_unlock_view(request: AuthenticatedRequest) -> HttpResponse:
    form = LoginUnlockForm(request.POST)
    if not form.is_valid():
        messages.error(
            request, "Nothing unlocked: " + "; ".join(str(e) for errs in form.errors.values() for e in errs)
        )
        return redirect("console-people")
    data = form.cleaned_data
    login_unlock(kind=data["kind"], value=data["value"])
    what = "User name" if data["kind"] == "name" else "Address"
    messages.success(request, f"{what} {data['value']} is unlocked: its failed log-ins are forgotten.")
    return redirect("console-people")


class WelcomeView(auth_views.PasswordResetConfirmView):
    """An invited account's one-time link: its owner sees their user name, chooses a password, then logs in."""

    template_name = "console/welcome.html"
    success_url = reverse_lazy("login")
    post_reset_login = False

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """A link that does not work counts as a failed log-in of the account it names (or, naming none,
        of what it says), toward the limit of every way in; a locked name or address is refused first."""
        name = self._claimed_name(kwargs["uidb64"])
        if not is_login_allowed(request, username=name):
            return lockout_response(request, credentials={"username": name})
        response = super().dispatch(request, *args, **kwargs)
        if not self.validlink and not isinstance(response, HttpResponseRedirect):
            login_failure_record(request=request, username=name)
        return response

    def _claimed_name(self, uidb64: str) -> str:
        user = super().get_user(uidb64)  # revoked invitations too: their links are failures as well
        # A link naming no account is counted under a name no account can have (no spaces in names).
        return str(user.get_username()) if user is not None else f"invitation link {uidb64[:100]}"

    def get_user(self, uidb64: str) -> User | None:
        user = super().get_user(uidb64)
        # A revoked invitation leaves the account inactive: no link, however it was come by, activates it.
        return user if user is not None and user.is_active else None

    def form_valid(self, form: SetPasswordForm) -> HttpResponse:
        messages.success(self.request, "Password set: log in with it now.")
        return super().form_valid(form)


welcome = WelcomeView.as_view()
