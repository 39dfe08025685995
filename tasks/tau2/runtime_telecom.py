"""τ²-bench's telecom domain (``tau2/domains/telecom``, MIT) as a tool environment run inside evalkit's
sandbox: the data models, the environment that syncs the line with the
customer's phone, the initial state, and the env assertions. This text is followed by
``runtime_telecom_agent.py`` (the agent's tools), ``runtime_telecom_user.py`` and
``runtime_telecom_phone.py`` (the customer's phone and its tools); none is ever imported by evalkit
(``tasks/tau2/env.py`` reads them, in that order, as one ``ToolEnv`` source).

The state is both databases as plain data (dates as ``datetime.date``/``datetime`` objects, records
with the field order and defaults of τ²-bench's pydantic models), carried whole between calls: the
database is small (5 plans, a few customers). Calls named ``user:<tool>`` are the customer's own
(τ²-bench's ``requestor="user"``); the rest are the agent's. After every call the environment syncs
(``TelecomEnvironment.sync_tools``). Tool results are what τ²-bench's ``Environment.to_json_str``
makes of them; errors what its ``get_response`` gives ("Error: " and the message). ``snapshot`` is
both database hashes (τ²-bench's ``get_db_hash``/``get_user_db_hash``) and the task's env
assertions evaluated on the state as it is (τ²-bench's ``run_env_assertion``, on a copy).

One deliberate difference: a new draft bill (``refuel_data`` for a customer without one) gets an id
derived from the customer and the bill count instead of ``uuid4``, so reruns are identical.
"""
import copy
import datetime
import hashlib
import json

TODAY = datetime.date(2025, 2, 25)  # τ²-bench's telecom get_today()
START = datetime.datetime(2025, 1, 1)


class ToolError(Exception):
    """A tool refused (τ²-bench raises ValueError); the caller reads "Error: <message>"."""

    evalkit_plain = True


class Model(dict):
    """A pydantic model's dump: ``to_json_str`` leaves it as ``model_dump()`` leaves it."""


# ---- the data models: (field, kind, default); kinds: str, float, int, bool, date, datetime, or a model
_REQ = object()
SCHEMA = {
    "Plan": [("plan_id", "str", _REQ), ("name", "str", _REQ), ("data_limit_gb", "float", _REQ),
             ("price_per_month", "float", _REQ), ("data_refueling_price_per_gb", "float", _REQ)],
    "Device": [("device_id", "str", _REQ), ("device_type", "str", _REQ), ("model", "str", _REQ),
               ("imei", "str", None), ("is_esim_capable", "bool", _REQ), ("activated", "bool", False),
               ("activation_date", "datetime", None), ("last_esim_transfer_date", "datetime", None)],
    "Line": [("line_id", "str", _REQ), ("phone_number", "str", _REQ), ("status", "str", "Pending Activation"),
             ("plan_id", "str", _REQ), ("device_id", "str", None), ("data_used_gb", "float", 0.0),
             ("data_refueling_gb", "float", 0.0), ("roaming_enabled", "bool", False),
             ("contract_end_date", "date", None), ("last_plan_change_date", "date", None),
             ("last_sim_replacement_date", "date", None), ("suspension_start_date", "date", None)],
    "LineItem": [("description", "str", _REQ), ("amount", "float", _REQ), ("date", "date", _REQ),
                 ("item_type", "str", _REQ)],
    "Bill": [("bill_id", "str", _REQ), ("customer_id", "str", _REQ), ("period_start", "date", _REQ),
             ("period_end", "date", _REQ), ("issue_date", "date", _REQ), ("total_due", "float", _REQ),
             ("due_date", "date", _REQ), ("line_items", ["LineItem"], []), ("status", "str", "Draft")],
    "Address": [("street", "str", _REQ), ("city", "str", _REQ), ("state", "str", _REQ), ("zip_code", "str", _REQ)],
    "PaymentMethod": [("method_type", "str", _REQ), ("account_number_last_4", "str", _REQ),
                      ("expiration_date", "str", _REQ)],
    "Customer": [("customer_id", "str", _REQ), ("full_name", "str", _REQ), ("date_of_birth", "str", _REQ),
                 ("email", "str", _REQ), ("phone_number", "str", _REQ), ("address", "Address", _REQ),
                 ("account_status", "str", "Pending Verification"), ("payment_methods", ["PaymentMethod"], []),
                 ("line_ids", ["str"], []), ("bill_ids", ["str"], []), ("created_at", "datetime", START),
                 ("last_extension_date", "date", None), ("goodwill_credit_used_this_year", "float", 0.0)],
    "TelecomDB": [("plans", ["Plan"], []), ("customers", ["Customer"], []), ("lines", ["Line"], []),
                  ("bills", ["Bill"], []), ("devices", ["Device"], [])],
}


def _value(kind, v):
    if v is None:
        return None
    if isinstance(kind, list):
        return [_value(kind[0], x) for x in v]
    if kind == "float":
        return float(v)
    if kind == "date":
        return v if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime) \
            else datetime.date.fromisoformat(str(v)[:10])
    if kind == "datetime":
        return v if isinstance(v, datetime.datetime) else datetime.datetime.fromisoformat(str(v))
    if isinstance(kind, dict):  # {"dict": kind}: a mapping of str to kind
        return {k: _value(kind["dict"], x) for k, x in v.items()}
    if kind in SCHEMA:
        return model(kind, v)
    return v


def model(name, data=None, **kw):
    """A record of model ``name`` as pydantic validates it: fields in order, defaults filled in."""
    data = dict(data or {}, **kw)
    out = Model()
    for field, kind, default in SCHEMA[name]:
        if field in data:
            out[field] = _value(kind, data[field])
        elif default is _REQ:
            raise ToolError(f"{name}: field {field} is required")
        else:
            out[field] = copy.deepcopy(default() if callable(default) else default)
    return out


def db_hash(data):
    """τ²-bench's ``get_pydantic_hash``: sha256 of ``json.dumps(model_dump(), sort_keys=True, default=str)``."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def to_json_str(resp):
    """τ²-bench's ``Environment.to_json_str``."""
    def process(r):
        if isinstance(r, Model) or isinstance(r, str) or r is None:
            return r
        if isinstance(r, (int, float, bool)):
            return str(r)
        if isinstance(r, (list, tuple)):
            return [process(x) for x in r]
        if isinstance(r, dict):
            return {k: process(v) for k, v in r.items()}
        if isinstance(r, (datetime.date, datetime.datetime)):
            return r.isoformat()
        raise ToolError(f"Unsupported type: {type(r)}")
    return resp if isinstance(resp, str) else json.dumps(process(resp), default=str)


# ---- the environment (tau2/domains/telecom/environment.py, tau2/environment/environment.py)
def sync(state):
    """``TelecomEnvironment.sync_tools``: the phone learns the line's status, roaming and data usage;
    a paid payment request pays the bill; a bill awaiting payment becomes the phone's payment request."""
    db, sur = state["db"], state["user"]["surroundings"]
    phone = sur["phone_number"]
    if phone is None:
        return
    line = _line_by_phone(db, phone)
    sur["line_active"] = line["status"] == "Active"
    sur["roaming_allowed"] = bool(line["roaming_enabled"])
    plan = _plan_by_id(db, line["plan_id"])
    sur["mobile_data_usage_exceeded"] = line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"]
    req = sur["payment_request"]
    if req is not None and req["paid"]:
        _bill_by_id(db, req["bill_id"])["status"] = "Paid"
        sur["payment_request"] = None
    if sur["payment_request"] is None:
        bills = _bills_awaiting_payment(db, get_customer_by_phone(db, phone))
        if bills:
            sur["payment_request"] = model("PaymentRequest", bill_id=bills[0]["bill_id"],
                                           amount_due=bills[0]["total_due"])


def run_function(state, env_type, func_name, arguments):
    """``Environment.run_env_function_call``: any function of either side (tools, setters, assertions)."""
    funcs = USER_FUNCTIONS if env_type == "user" else AGENT_FUNCTIONS  # noqa: F821 (runtime_telecom_user.py)
    if func_name not in funcs:
        raise ToolError(f"Function {func_name} not found in {env_type} tools")
    res = funcs[func_name](state["user"] if env_type == "user" else state["db"], **arguments)
    sync(state)
    return res


def setup(config):
    """A fresh environment (``get_environment``), then the task's initial state (``set_state``)."""
    state = {"db": model("TelecomDB", json.loads(config["db"])),
             "user": model("TelecomUserDB", json.loads(config["user_db"])), "assertions": config.get("assertions")}
    state["user"]["default_vpn"] = default_vpn()  # noqa: F821 (τ²-bench's default_vpn_details)
    sync(state)
    init = config.get("initial_state") or {}
    data = init.get("initialization_data") or {}
    if data.get("agent_data"):  # ToolKitBase.update_db
        state["db"] = model("TelecomDB", _deep_update(_plain(state["db"]), data["agent_data"]))
    if data.get("user_data"):
        vpn = state["user"]["default_vpn"]
        state["user"] = model("TelecomUserDB", _deep_update(_plain(user_db(state["user"])), data["user_data"]))  # noqa: F821
        state["user"]["default_vpn"] = vpn
    for action in init.get("initialization_actions") or []:
        run_function(state, action["env_type"], action["func_name"], action.get("arguments") or {})
    sync(state)
    return state


def _deep_update(base, update):
    out = dict(base)
    for k, v in update.items():
        out[k] = _deep_update(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


def _plain(x):
    return json.loads(json.dumps(x, default=str))


def call(state, name, arguments):
    user = name.startswith("user:")
    tools = USER_TOOLS if user else AGENT_TOOLS  # noqa: F821
    tool = name[5:] if user else name
    if tool not in tools:
        raise ToolError(f"Tool '{tool}' not found.")
    try:
        res = tools[tool](state["user"] if user else state["db"], **arguments)
        sync(state)
    except ToolError:
        raise
    except Exception as e:  # τ²-bench's get_response turns any exception into "Error: {e}"
        raise ToolError(str(e)) from None
    return to_json_str(res)


def assertions(state, items):
    """τ²-bench's ``run_env_assertion`` for each of ``items``, in order, on a copy of the state."""
    state = copy.deepcopy(state)
    out = []
    for a in items or []:
        try:
            res = run_function(state, a["env_type"], a["func_name"], a.get("arguments") or {})
            met, error = (res == a.get("assert_value", True)) if isinstance(res, bool) else False, None
        except Exception as e:  # noqa: BLE001 (an assertion that raises is not met)
            met, error = False, str(e)
        out.append({"env_type": a["env_type"], "func_name": a["func_name"], "arguments": a.get("arguments") or {},
                    "assert_value": a.get("assert_value", True), "met": met, **({"error": error} if error else {})})
    return out


def snapshot(state):
    return {"db_hash": db_hash(state["db"]), "user_db_hash": db_hash(user_db(state["user"])),  # noqa: F821
            "env_assertions": assertions(state, state.get("assertions"))}
