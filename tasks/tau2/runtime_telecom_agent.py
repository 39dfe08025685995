"""τ²-bench's telecom agent tools (``tau2/domains/telecom/tools.py``, MIT) over the carrier's database
as plain data: the tools the agent is offered, and the functions the tasks' initial states and env
assertions call. Part of the telecom sandbox source after ``runtime_telecom.py``; never imported."""
import datetime
import hashlib


# ---- the agent's tools (tau2/domains/telecom/tools.py)
def _find(rows, key, value, what):
    for r in rows:
        if r[key] == value:
            return r
    raise ToolError(f"{what} {value} not found")


def _line_by_id(db, line_id):
    return _find(db["lines"], "line_id", line_id, "Line with ID")


def _plan_by_id(db, plan_id):
    return _find(db["plans"], "plan_id", plan_id, "Plan with ID")


def _bill_by_id(db, bill_id):
    return _find(db["bills"], "bill_id", bill_id, "Bill with ID")


def _line_by_phone(db, phone_number):
    return _find(db["lines"], "phone_number", phone_number, "Line with phone number")


def get_customer_by_phone(db, phone_number):
    for c in db["customers"]:
        if c["phone_number"] == phone_number:
            return c
        for line_id in c["line_ids"]:
            if _line_by_id(db, line_id)["phone_number"] == phone_number:
                return c
    raise ToolError(f"Customer with phone number {phone_number} not found")


def get_customer_by_id(db, customer_id):
    return _find(db["customers"], "customer_id", customer_id, "Customer with ID")


def get_customer_by_name(db, full_name, dob):
    return [c for c in db["customers"] if c["full_name"].lower() == full_name.lower() and c["date_of_birth"] == dob]


def _target_line(db, customer_id, line_id):
    if line_id not in get_customer_by_id(db, customer_id)["line_ids"]:
        raise ToolError(f"Line {line_id} not found for customer {customer_id}")
    return _line_by_id(db, line_id)


def get_details_by_id(db, id):
    for prefix, getter in (("L", _line_by_id), ("D", None), ("B", _bill_by_id), ("C", get_customer_by_id),
                           ("P", _plan_by_id)):
        if id.startswith(prefix):
            if getter is None:
                return _find(db["devices"], "device_id", id, "Device with ID")
            return getter(db, id)
    raise ToolError(f"Unknown ID format or type: {id}")


def suspend_line(db, customer_id, line_id, reason):
    line = _target_line(db, customer_id, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend")
    line["status"], line["suspension_start_date"] = "Suspended", TODAY
    return {"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line}


def resume_line(db, customer_id, line_id):
    line = _target_line(db, customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):
        raise ToolError("Line must be suspended to resume")
    line["status"], line["suspension_start_date"] = "Active", None
    return {"message": "Line resumed successfully", "line": line}


def get_bills_for_customer(db, customer_id, limit=12):
    bills = [_bill_by_id(db, b) for b in get_customer_by_id(db, customer_id)["bill_ids"]]
    return sorted(bills, key=lambda b: b["issue_date"], reverse=True)[:limit]


def _bills_awaiting_payment(db, customer):
    return [b for b in (_bill_by_id(db, i) for i in customer["bill_ids"]) if b["status"] == "Awaiting Payment"]


def send_payment_request(db, customer_id, bill_id):
    customer = get_customer_by_id(db, customer_id)
    if _bills_awaiting_payment(db, customer):
        raise ToolError("A bill is already awaiting payment for this customer")
    if bill_id not in customer["bill_ids"]:
        raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
    bill = _bill_by_id(db, bill_id)
    bill["status"] = "Awaiting Payment"
    return f"Payment request sent to the customer for bill {bill['bill_id']}"


def _apply_one_time_charge(db, customer_id, amount, description):
    customer = get_customer_by_id(db, customer_id)
    draft = next((b for b in (_bill_by_id(db, i) for i in customer["bill_ids"]) if b["status"] == "Draft"), None)
    if draft is None:
        nxt = (TODAY.replace(day=1) + datetime.timedelta(days=32)).replace(day=1)
        end = nxt.replace(month=nxt.month + 1 if nxt.month < 12 else 1,
                          year=nxt.year if nxt.month < 12 else nxt.year + 1) - datetime.timedelta(days=1)
        seed = f"{customer_id}:{len(db['bills'])}".encode()  # τ²-bench: uuid4 (see the module's note)
        draft = model("Bill", bill_id="B" + hashlib.sha256(seed).hexdigest()[:8], customer_id=customer_id,
                      period_start=nxt, period_end=end, issue_date=nxt, total_due=0.0,
                      due_date=nxt + datetime.timedelta(days=14), status="Draft")
        db["bills"].append(draft)
        customer["bill_ids"].append(draft["bill_id"])
    draft["line_items"].append(model("LineItem", description=description, amount=amount, date=TODAY,
                                     item_type="Credit" if amount < 0 else "Charge"))
    draft["total_due"] += amount


def get_data_usage(db, customer_id, line_id):
    line = _target_line(db, customer_id, line_id)
    plan = _plan_by_id(db, line["plan_id"])
    cycle_end = datetime.date(TODAY.year, TODAY.month + 1 if TODAY.month < 12 else 1, 1) - datetime.timedelta(days=1)
    return {"line_id": line_id, "data_used_gb": line["data_used_gb"], "data_limit_gb": plan["data_limit_gb"],
            "data_refueling_gb": line["data_refueling_gb"], "cycle_end_date": cycle_end}


def set_data_usage(db, customer_id, line_id, data_used_gb):
    _target_line(db, customer_id, line_id)["data_used_gb"] = data_used_gb
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


def enable_roaming(db, customer_id, line_id):
    line = _target_line(db, customer_id, line_id)
    if line["roaming_enabled"]:
        return "Roaming was already enabled"
    line["roaming_enabled"] = True
    return "Roaming enabled successfully"


def disable_roaming(db, customer_id, line_id):
    line = _target_line(db, customer_id, line_id)
    if not line["roaming_enabled"]:
        return "Roaming was already disabled"
    line["roaming_enabled"] = False
    return "Roaming disabled successfully"


def transfer_to_human_agents(db, summary):
    return "Transfer successful"


def refuel_data(db, customer_id, line_id, gb_amount):
    line = _target_line(db, customer_id, line_id)
    if gb_amount <= 0:
        raise ToolError("Refuel amount must be positive")
    plan = _plan_by_id(db, line["plan_id"])
    charge = gb_amount * plan["data_refueling_price_per_gb"]
    line["data_refueling_gb"] += gb_amount
    _apply_one_time_charge(db, customer_id, charge,
                           f"Data refueling: {gb_amount} GB at ${plan['data_refueling_price_per_gb']}/GB")
    return {"message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": line["data_refueling_gb"], "charge": charge}


def suspend_line_for_overdue_bill(db, customer_id, line_id, new_bill_id, contract_ended):
    line = _line_by_id(db, line_id)
    if line["status"] != "Active":
        raise ToolError("Line must be active to suspend for unpaid bill")
    amount = _plan_by_id(db, line["plan_id"])["price_per_month"]
    if amount <= 0:
        raise ToolError("Amount must be positive for overdue bill")
    customer = get_customer_by_id(db, customer_id)
    if any(_bill_by_id(db, b)["status"] == "Overdue" for b in customer["bill_ids"]):
        raise ToolError("Customer already has an overdue bill")
    last_day = TODAY.replace(day=1) - datetime.timedelta(days=1)
    first_day = last_day.replace(day=1)
    bill = model("Bill", bill_id=new_bill_id, customer_id=customer_id, period_start=first_day, period_end=last_day,
                 issue_date=first_day, total_due=0.0, due_date=first_day + datetime.timedelta(days=14),
                 status="Overdue")
    bill["line_items"].append(model("LineItem", description=f"Charge for line {line['line_id']}", amount=amount,
                                    date=TODAY, item_type="Charge" if amount > 0 else "Credit"))
    bill["total_due"] += amount
    db["bills"].append(bill)
    customer["bill_ids"].append(new_bill_id)
    line["status"], line["suspension_start_date"] = "Suspended", TODAY
    if contract_ended:
        line["contract_end_date"] = last_day
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


def assert_data_refueling_amount(db, customer_id, line_id, expected_amount):
    return abs(_target_line(db, customer_id, line_id)["data_refueling_gb"] - expected_amount) < 1e-6


def assert_line_status(db, customer_id, line_id, expected_status):
    return _target_line(db, customer_id, line_id)["status"] == expected_status


def assert_overdue_bill_exists(db, customer_id, overdue_bill_id):
    if overdue_bill_id not in get_customer_by_id(db, customer_id)["bill_ids"]:
        raise ToolError(f"Overdue bill {overdue_bill_id} not found")
    if _bill_by_id(db, overdue_bill_id)["status"] != "Overdue":
        raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
    return True


def assert_no_overdue_bill(db, overdue_bill_id):
    try:
        return _bill_by_id(db, overdue_bill_id)["status"] == "Paid"
    except ToolError:
        return True


AGENT_TOOLS = {f.__name__: f for f in (
    get_customer_by_phone, get_customer_by_id, get_customer_by_name, get_details_by_id, suspend_line, resume_line,
    get_bills_for_customer, send_payment_request, get_data_usage, enable_roaming, disable_roaming,
    transfer_to_human_agents, refuel_data)}
AGENT_FUNCTIONS = dict(AGENT_TOOLS, set_data_usage=set_data_usage,
                       suspend_line_for_overdue_bill=suspend_line_for_overdue_bill,
                       assert_data_refueling_amount=assert_data_refueling_amount,
                       assert_line_status=assert_line_status, assert_overdue_bill_exists=assert_overdue_bill_exists,
                       assert_no_overdue_bill=assert_no_overdue_bill)
