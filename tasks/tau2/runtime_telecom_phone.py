"""The rest of τ²-bench's telecom phone tools (``tau2/domains/telecom/user_tools.py``, MIT): Wi-Fi,
Wi-Fi calling, VPN, apps, MMS, reboot, payments, the assertions, and the tables of tools and functions.
Part of the telecom sandbox source after ``runtime_telecom_user.py``; never imported."""


def check_wifi_status(u):
    d = u["device"]
    if not d["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if d["wifi_connected"]:
        return f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength: {d['wifi_signal_strength']}."
    return "Wi-Fi is ON but not connected to any network."


def toggle_wifi(u):
    d = u["device"]
    if d["airplane_mode"]:
        return f"Cannot change Wi-Fi settings while Airplane Mode is ON.{_bar(u)}"
    d["wifi_enabled"] = not d["wifi_enabled"]
    if not d["wifi_enabled"]:
        _no_wifi(d)
    return f"Wi-Fi is now {'ON' if d['wifi_enabled'] else 'OFF'}.{_bar(u)}"


def check_wifi_calling_status(u):
    return f"Wi-Fi Calling is currently turned {'ON' if u['device']['wifi_calling_enabled'] else 'OFF'}."


def toggle_wifi_calling(u):
    return f"Wi-Fi Calling is now {'ON' if _toggle(u, 'wifi_calling_enabled', False) else 'OFF'}.{_bar(u)}"


def set_wifi_calling(u, enabled, mms_over_wifi=None):
    if u["device"]["wifi_calling_enabled"] != enabled:
        _toggle(u, "wifi_calling_enabled", False)
    msg = f"Wi-Fi Calling is now {'ON' if enabled else 'OFF'}."
    if mms_over_wifi is not None:
        u["device"]["wifi_calling_mms_over_wifi"] = mms_over_wifi
        msg += f"\nMMS over Wi-Fi is now {'ON' if mms_over_wifi else 'OFF'}."
    return msg


def check_vpn_status(u):
    d = u["device"]
    if d["vpn_connected"]:
        v = d["vpn_details"]
        if not v:
            return "VPN is ON and connected (no specific details available)."
        perf = f"<PerformanceLevel.{v['server_performance'].upper()}: '{v['server_performance']}'>"  # the enum's repr
        return (f"VPN is ON and connected. Details: {{'server_address': {v['server_address']!r}, "
                f"'protocol': {v['protocol']!r}, 'server_performance': {perf}}}")
    return "VPN is turned ON in settings, but currently not connected." if d["vpn_enabled_setting"] \
        else "VPN is turned OFF."


def connect_vpn(u):
    d = u["device"]
    if d["vpn_connected"]:
        return "VPN already connected."
    d["vpn_connected"], d["vpn_details"] = True, u["default_vpn"]
    return f"VPN connected successfully.{_bar(u)}"


def _disconnect_vpn(u):
    d = u["device"]
    if not d["vpn_connected"]:
        return False
    d["vpn_connected"], d["vpn_details"] = False, None
    return True


def disconnect_vpn(u):
    done = _disconnect_vpn(u)
    return f"{'VPN disconnected successfully.' if done else 'No active VPN connection to disconnect.'}{_bar(u)}"


def break_vpn(u):
    connect_vpn(u)
    if u["device"]["vpn_details"] is not None:
        u["device"]["vpn_details"]["server_performance"] = "poor"
    return "VPN connection broken."


def check_installed_apps(u):
    return f"The following apps are installed on the phone: {', '.join(u['device']['app_statuses'])}"


def _granted(perms):
    return [name.replace("_", " ").lower() for name, allowed in perms.items() if allowed]


def check_app_status(u, app_name):
    app = u["device"]["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    lines = [f"Status for App: {app_name}"]
    granted = _granted(app["permissions"])
    lines += [" - Permissions: None granted."] if not granted else \
        [" - Permissions Granted:"] + [f"   - {p}" for p in granted]
    return "\n".join(lines)


def check_app_permissions(u, app_name):
    app = u["device"]["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    granted = _granted(app["permissions"])
    return f"App '{app_name}' has permission for: {', '.join(granted)}." if granted else \
        f"App '{app_name}' currently has no permissions granted."


def grant_app_permission(u, app_name, permission):
    app = u["device"]["app_statuses"].get(app_name)
    permission = permission.lower()
    if app is None:
        ok, msg = False, f"App '{app_name}' not found. Cannot grant permission."
    elif permission not in app["permissions"]:
        ok, msg = False, (f"Permission '{permission}' not tracked for app '{app_name}', available permissions: "
                          f"{list(app['permissions'])}")
    else:
        app["permissions"][permission] = True
        ok, msg = True, f"Permission '{permission}' granted to app '{app_name}'."
    return f"{'Success. ' if ok else 'Error. '}{msg}{_bar(u)}"


def remove_app_permission(u, app_name, permission):
    app = u["device"]["app_statuses"].get(app_name)
    permission = permission.lower()
    if app is None:
        return False, f"App '{app_name}' not found. Cannot remove permission."
    if permission not in app["permissions"]:
        return False, f"Permission '{permission}' not tracked for app '{app_name}'."
    app["permissions"][permission] = False
    return True, f"Permission '{permission}' removed from app '{app_name}'."


def _can_send_mms(u):
    d = u["device"]
    if not _data_working(u) or d["network_technology_connected"] == "2G":
        return False
    if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
        return False
    if d["active_apn_settings"]["mmsc_url"] is None:
        return False
    app = d["app_statuses"].get("messaging")
    return bool(app and app["permissions"]["storage"] and app["permissions"]["sms"])


def can_send_mms(u):
    return "Your messaging app can send MMS messages." if _can_send_mms(u) else \
        "Your messaging app cannot send MMS messages."


def reboot_device(u):
    d = u["device"]
    lines = []
    if d["active_apn_settings"]["reset_at_reboot"]:
        lines.append("Resetting APN settings...")
        d["active_apn_settings"] = model("APNSettings")  # noqa: F821
    lines.append("Restarting network services...")
    d["network_connection_status"] = "searching"
    simulate_network_search(u)
    return "\n".join(lines) + _bar(u)


def simulate_network_search(u):
    d, s = u["device"], u["surroundings"]
    if _sim_status(u) == "active":
        d["network_connection_status"] = "connected"
        pref = d["network_mode_preference"]
        tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(pref, "4G")
        if pref == "4g_5g_preferred" and s["signal_strength"].get("5G", "none") != "none":
            tech = "5G"
        d["network_technology_connected"], d["network_signal_strength"] = tech, s["signal_strength"].get(tech, "none")
    if _sim_status(u) != "active" or d["airplane_mode"] or d["active_apn_settings"]["apn_name"] == "broken" \
            or not s["line_active"]:
        d["network_connection_status"], d["network_technology_connected"] = "no_service", "none"
        d["network_signal_strength"] = "none"


def check_payment_request(u):
    req = u["surroundings"]["payment_request"]
    if req is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {req['bill_id']} of {req['amount_due']} USD."


def make_payment(u):
    req = u["surroundings"]["payment_request"]
    if req is None:
        return "You do not have a payment request."
    req["paid"] = True
    return f"Payment of {req['amount_due']} USD has been made for bill {req['bill_id']}."


def assert_airplane_mode_status(u, expected_status):
    return u["device"]["airplane_mode"] == expected_status


def assert_service_status(u, expected_status):
    return u["device"]["network_connection_status"] == expected_status


def assert_mobile_data_status(u, expected_status):
    return _data_working(u) == expected_status


def assert_mobile_roaming_status(u, expected_status):
    return u["device"]["roaming_enabled"] == expected_status


def assert_mobile_data_saver_mode_status(u, expected_status):
    return u["device"]["data_saver_mode"] == expected_status


def assert_internet_speed(u, expected_speed, expected_desc=None):
    speed, desc = _speed(u)
    speed = speed or 0.0
    return speed >= expected_speed if expected_desc is None else \
        speed >= expected_speed and (desc or "").lower() == expected_desc.lower()


def assert_internet_not_excellent(u):
    return (_speed(u)[1] or "").lower() != "excellent"


def assert_can_send_mms(u, expected_status):
    return _can_send_mms(u) == expected_status


def assert_mobile_data_usage_exceeded(u, expected_status):
    return u["surroundings"]["mobile_data_usage_exceeded"] == expected_status


USER_TOOLS = {f.__name__: f for f in (
    check_status_bar, check_network_status, check_network_mode_preference, set_network_mode_preference,
    run_speed_test, toggle_airplane_mode, check_sim_status, reseat_sim_card, toggle_data, toggle_roaming,
    check_data_restriction_status, toggle_data_saver_mode, check_apn_settings, set_apn_settings, reset_apn_settings,
    check_wifi_status, toggle_wifi, check_wifi_calling_status, toggle_wifi_calling, check_vpn_status, connect_vpn,
    disconnect_vpn, check_installed_apps, check_app_status, check_app_permissions, grant_app_permission,
    can_send_mms, reboot_device, check_payment_request, make_payment)}
USER_FUNCTIONS = dict(USER_TOOLS, **{f.__name__: f for f in (
    set_user_info, set_user_location, turn_airplane_mode_on, turn_airplane_mode_off, unseat_sim_card, lock_sim_card,
    turn_data_on, turn_data_off, turn_roaming_on, turn_roaming_off, turn_data_saver_mode_on, turn_data_saver_mode_off,
    break_apn_settings, break_apn_mms_setting, set_wifi_calling, break_vpn, remove_app_permission,
    simulate_network_search, assert_airplane_mode_status, assert_service_status, assert_mobile_data_status,
    assert_mobile_roaming_status, assert_mobile_data_saver_mode_status, assert_internet_speed,
    assert_internet_not_excellent, assert_can_send_mms, assert_mobile_data_usage_exceeded)})
