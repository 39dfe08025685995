"""τ²-bench's telecom customer side (``tau2/domains/telecom/user_tools.py`` and ``user_data_model.py``,
MIT): the customer's phone (``MockPhoneAttributes``), their surroundings and the tools the simulated
customer calls on the phone, message for message (the rest in ``runtime_telecom_phone.py``).
Follows ``runtime_telecom_agent.py`` in one sandbox source; never imported by evalkit. Each function
takes the user database ``u`` (``device``, ``surroundings``, and ``default_vpn``, τ²-bench's
``default_vpn_details``: one object that a connected VPN's details are, so ``break_vpn`` degrades
later connections too, as in τ²-bench).
"""


def _apps():
    return {"messaging": model("AppStatus", app_name="messaging",
                               permissions=model("AppPermissions", sms=True, storage=True, phone=True)),
            "browser": model("AppStatus", app_name="browser",
                             permissions=model("AppPermissions", network=True, storage=True))}


SCHEMA.update({  # noqa: F821 (runtime_telecom.py)
    "APNSettings": [("apn_name", "str", "internet"), ("reset_at_reboot", "bool", False), ("mms_apn", "str", "mms"),
                    ("mmsc_url", "str", "http://mms.carrier.com/mms/wapenc"), ("mms_proxy", "str", None),
                    ("mms_port", "int", None)],
    "VpnDetails": [("server_address", "str", None), ("protocol", "str", None),
                   ("server_performance", "str", "unknown")],
    "AppPermissions": [("sms", "bool", False), ("storage", "bool", False), ("phone", "bool", False),
                       ("network", "bool", False)],
    "AppStatus": [("app_name", "str", None), ("permissions", "AppPermissions", lambda: model("AppPermissions"))],
    "MockPhoneAttributes": [
        ("sim_card_status", "str", "active"), ("sim_card_missing", "bool", False), ("airplane_mode", "bool", False),
        ("network_signal_strength", "str", "good"), ("network_technology_connected", "str", "5G"),
        ("network_connection_status", "str", "connected"), ("battery_level", "int", 80),
        ("data_enabled", "bool", True), ("roaming_enabled", "bool", False),
        ("network_mode_preference", "str", "4g_5g_preferred"),
        ("active_apn_settings", "APNSettings", lambda: model("APNSettings")), ("wifi_enabled", "bool", False),
        ("wifi_connected", "bool", False), ("wifi_ssid", "str", None), ("wifi_signal_strength", "str", "none"),
        ("wifi_calling_enabled", "bool", False), ("wifi_calling_mms_over_wifi", "bool", False),
        ("data_saver_mode", "bool", False), ("vpn_enabled_setting", "bool", False), ("vpn_connected", "bool", False),
        ("vpn_details", "VpnDetails", None), ("app_statuses", {"dict": "AppStatus"}, _apps)],
    "PaymentRequest": [("bill_id", "str", None), ("amount_due", "float", None), ("paid", "bool", False)],
    "UserSurroundings": [
        ("name", "str", None), ("phone_number", "str", None), ("is_abroad", "bool", False),
        ("roaming_allowed", "bool", False),
        ("signal_strength", "str", lambda: {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}),
        ("mobile_data_usage_exceeded", "bool", False), ("line_active", "bool", True),
        ("payment_request", "PaymentRequest", None)],
    "TelecomUserDB": [("device", "MockPhoneAttributes", lambda: model("MockPhoneAttributes")),
                      ("surroundings", "UserSurroundings", lambda: model("UserSurroundings"))],
})
MODES = ("4g_5g_preferred", "4g_only", "3g_only", "2g_only")


def default_vpn():
    return model("VpnDetails", server_address="192.168.1.1", protocol="OpenVPN", server_performance="excellent")  # noqa: F821


def user_db(u):
    return {"device": u["device"], "surroundings": u["surroundings"]}


def set_user_info(u, name, phone_number):
    u["surroundings"]["name"], u["surroundings"]["phone_number"] = name, phone_number


def set_user_location(u, abroad):
    u["surroundings"]["is_abroad"] = abroad


def _status_bar(u):
    d = u["device"]
    ind = []
    if d["airplane_mode"]:
        ind.append("✈️ Airplane Mode")
    else:
        ind.append({"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair", "good": "📶³ Good",
                    "excellent": "📶⁴ Excellent"}.get(d["network_signal_strength"], "📵 No Signal"))
        if d["network_technology_connected"] != "none":
            ind.append(d["network_technology_connected"])
        if d["data_enabled"] and d["network_technology_connected"] != "none":
            ind.append("📱 Data Enabled")
            if d["data_saver_mode"]:
                ind.append("🔽 Data Saver")
        else:
            ind.append("📵 Data Disabled")
    if d["wifi_enabled"] and d["wifi_connected"]:
        ind.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
    if d["vpn_connected"]:
        ind.append("🔒 VPN Connected")
    ind.append(f"🔋 {d['battery_level']}%")
    return " | ".join(ind)


def _bar(u):
    return f"\nStatus Bar: {_status_bar(u)}"


def check_status_bar(u):
    return f"Status Bar: {_status_bar(u)}"


def _sim_status(u):
    return "missing" if u["device"]["sim_card_missing"] else u["device"]["sim_card_status"]


def check_network_status(u):
    d = u["device"]
    lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}", f"SIM Card Status: {_sim_status(u)}",
             f"Cellular Connection: {d['network_connection_status']}",
             f"Cellular Signal: {d['network_signal_strength']}",
             f"Cellular Network Type: {d['network_technology_connected']}",
             f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
             f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
             f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
             f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
    if d["wifi_connected"]:
        lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
    return "\n".join(lines)


def check_network_mode_preference(u):
    return f"Network Mode Preference: {u['device']['network_mode_preference']}"


def set_network_mode_preference(u, mode):
    if isinstance(mode, str) and mode in MODES:
        u["device"]["network_mode_preference"] = mode
        simulate_network_search(u)
        return f"Preferred Network Mode set to: {mode}{_bar(u)}"
    return (f"Failed to set network mode: '{mode}' is not a valid option. Please use one of: "
            f"{', '.join(MODES)}{_bar(u)}")


def _data_working(u):
    d, s = u["device"], u["surroundings"]
    if d["airplane_mode"] or d["network_signal_strength"] == "none" or d["network_connection_status"] == "no_service":
        return False
    if s["is_abroad"] and (not d["roaming_enabled"] or not s["roaming_allowed"]):
        return False
    return bool(d["data_enabled"]) and not s["mobile_data_usage_exceeded"]


def _speed(u):
    if not _data_working(u):
        return None, "No Connection"
    d = u["device"]
    factor = 0.1 if d["vpn_connected"] and d["vpn_details"] and d["vpn_details"]["server_performance"] == "poor" \
        else 1.0
    if d["data_saver_mode"]:
        factor *= 0.2
    lo, hi = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0), "5G": (50.0, 500.0)}.get(
        d["network_technology_connected"], (0.0, 0.0))
    signal = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}.get(d["network_signal_strength"], 0.0)
    speed = round((lo + hi) / 2.0 * signal * factor, 2)
    desc = "Very Poor" if speed < 1 else "Poor" if speed < 5 else "Fair" if speed < 25 else \
        "Good" if speed < 100 else "Excellent"
    return speed, desc


ADVICE = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
          "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
          "Fair": "Connection is okay for web browsing and some standard definition streaming.",
          "Good": "Connection is good for most activities, including HD streaming.",
          "Excellent": "Connection is very fast."}


def run_speed_test(u):
    speed, desc = _speed(u)
    if speed is None:
        return f"Speed test failed: {desc or 'Could not determine speed'}."
    return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {ADVICE.get(desc, '')}"


def _no_wifi(d):
    d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"


def _toggle_airplane(u):
    d = u["device"]
    was_on = d["airplane_mode"]
    d["airplane_mode"] = not was_on
    if was_on:
        d["network_connection_status"] = "searching"
        if d["wifi_enabled"]:
            _no_wifi(d)
    else:
        _no_wifi(d)
        if d["vpn_connected"]:
            _disconnect_vpn(u)
    simulate_network_search(u)
    return d["airplane_mode"]


def toggle_airplane_mode(u):
    return f"Airplane Mode is now {'ON' if _toggle_airplane(u) else 'OFF'}.{_bar(u)}"


def turn_airplane_mode_on(u):
    if not _toggle_airplane(u):
        _toggle_airplane(u)
    return "Airplane Mode is now ON."


def turn_airplane_mode_off(u):
    if _toggle_airplane(u):
        _toggle_airplane(u)
    return "Airplane Mode is now OFF."


def check_sim_status(u):
    return {"active": "Your SIM card is active and working.", "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}.get(
        _sim_status(u), f"Unknown SIM status: {_sim_status(u)}")


def reseat_sim_card(u):
    u["device"]["sim_card_missing"] = False
    simulate_network_search(u)
    return f"SIM card re-seated successfully.{_bar(u)}"


def unseat_sim_card(u):
    u["device"]["sim_card_missing"] = True
    simulate_network_search(u)
    return "SIM card un-seated successfully."


def lock_sim_card(u, mode):
    if mode in ("pin", "puk"):
        u["device"]["sim_card_status"] = "locked_" + mode
    simulate_network_search(u)
    return f"SIM card locked successfully in {mode} mode."


def _toggle(u, key, search=True):
    u["device"][key] = not u["device"][key]
    if search:
        simulate_network_search(u)
    return u["device"][key]


def toggle_data(u):
    return f"Mobile Data is now {'ON' if _toggle(u, 'data_enabled') else 'OFF'}.{_bar(u)}"


def turn_data_on(u):
    u["device"]["data_enabled"] = True
    return "Data connection restored."


def turn_data_off(u):
    if _toggle(u, "data_enabled"):
        _toggle(u, "data_enabled")
    return "Data connection broken."


def toggle_roaming(u):
    return f"Data Roaming is now {'ON' if _toggle(u, 'roaming_enabled') else 'OFF'}.{_bar(u)}"


def turn_roaming_on(u):
    if not _toggle(u, "roaming_enabled"):
        _toggle(u, "roaming_enabled")
    return "Data Roaming is now ON."


def turn_roaming_off(u):
    if _toggle(u, "roaming_enabled"):
        _toggle(u, "roaming_enabled")
    return "Data Roaming is now OFF."


def check_data_restriction_status(u):
    return "Data Saver mode is ON (limits data usage)." if u["device"]["data_saver_mode"] else "Data Saver mode is OFF."


def toggle_data_saver_mode(u):
    return f"Data Saver Mode is now {'ON' if _toggle(u, 'data_saver_mode', False) else 'OFF'}.{_bar(u)}"


def turn_data_saver_mode_on(u):
    if not _toggle(u, "data_saver_mode", False):
        _toggle(u, "data_saver_mode", False)
    return "Data Saver Mode is now ON."


def turn_data_saver_mode_off(u):
    if _toggle(u, "data_saver_mode", False):
        _toggle(u, "data_saver_mode", False)
    return "Data Saver Mode is now OFF."


def check_apn_settings(u):
    apn = u["device"]["active_apn_settings"]
    return (f"Current APN Name: {apn['apn_name'] or 'Not Set'}\nMMSC URL (for picture messages): "
            f"{apn['mmsc_url'] or 'Not Set'}\n(These are technical settings, usually best left unchanged.)")


def set_apn_settings(u, apn_settings):
    apn = model("APNSettings", apn_settings if isinstance(apn_settings, dict) else {})  # noqa: F821
    u["device"]["active_apn_settings"] = apn
    simulate_network_search(u)
    return f"APN settings set to: {apn['apn_name']}{_bar(u)}"


def reset_apn_settings(u):
    u["device"]["active_apn_settings"]["reset_at_reboot"] = True
    simulate_network_search(u)
    return f"APN settings will reset at reboot.{_bar(u)}"


def break_apn_settings(u):
    u["device"]["active_apn_settings"]["apn_name"] = "broken"
    simulate_network_search(u)
    return "APN settings broken. Please call reset_apn_settings() to fix."


def break_apn_mms_setting(u):
    u["device"]["active_apn_settings"]["mmsc_url"] = None
    return "APN MMS setting broken. Please call reset_apn_settings() to fix."
