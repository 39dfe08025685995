"""τ²-bench's banking_knowledge discoverable agent tools for a debit card's life (``tau2/domains/
banking_knowledge/tools.py`` as the reference; MIT): order, activate (three tools, by why the card was
issued), close, freeze and unfreeze, as evalkit's own code over the plain-data database. Part of the banking
sandbox source; never imported by evalkit."""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821


SEQUENTIAL_PINS = ("0123", "1234", "2345", "3456", "4567", "5678", "6789", "9876", "8765", "7654", "6543", "5432",
                   "4321", "3210")
#: the activation tool for each issue reason
ACTIVATOR = {"new_account": "8291", "first_card": "8291", "lost": "8292", "stolen": "8292", "fraud": "8292",
             "expired": "8293", "damaged": "8293", "upgrade": "8293", "bank_reissue": "8293"}


def pin_problem(pin):
    """``_validate_pin``: why the PIN is refused, or None."""
    if not pin or not pin.isdigit() or len(pin) != 4:
        return "PIN must be exactly 4 digits."
    if pin in SEQUENTIAL_PINS:
        return "PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN."
    if len(set(pin)) == 1:
        return "PIN cannot be all the same digit (e.g., 1111). Please choose a more secure PIN."
    return None


def _days_in(month):
    return "31" if month in ("01", "03", "05", "07", "08", "10", "12") else "28" if month == "02" else "30"


def _digits(seed, length, n):
    return "".join(c for c in hex_id(seed, length) if c.isdigit())[:n].zfill(n)


def _issue_reason(cards):
    """Why a new card is issued: after a lost/stolen/fraud closure, that; else first card or new account."""
    closed = next((c for c in cards if c.get("status") == "CLOSED"), None)
    if closed:
        why = closed.get("closure_reason", "first_card")
        if why in ("lost", "stolen", "fraud", "fraud_suspected"):
            return "fraud" if why == "fraud_suspected" else why
        return "first_card"
    return "first_card" if cards else "new_account"


@tool(discoverable=True)
def order_debit_card_5739(db, account_id, user_id, delivery_option, delivery_fee, card_design, design_fee,
                          shipping_address, excess_replacement_fee=None):
    excess = excess_replacement_fee or 0
    try:
        delivery_fee = float(delivery_fee) if delivery_fee is not None else None
    except (TypeError, ValueError):
        return "Error: delivery_fee must be a number."
    try:
        design_fee = float(design_fee) if design_fee is not None else None
    except (TypeError, ValueError):
        return "Error: design_fee must be a number."
    try:
        excess = float(excess)
    except (TypeError, ValueError):
        excess = 0
    if not all([account_id, user_id, delivery_option, delivery_fee is not None, card_design, design_fee is not None,
                shipping_address]):
        return ("Error: Missing required parameters. Required: account_id, user_id, delivery_option, delivery_fee, "
                "card_design, design_fee, shipping_address.")
    times = {"STANDARD": "7-10 business days", "EXPEDITED": "3-5 business days", "RUSH": "1-2 business days"}
    if delivery_option.upper() not in times:
        return f"Error: Invalid delivery_option. Must be one of: {list(times)}"
    option = delivery_option.upper()
    if card_design.upper() not in ("CLASSIC", "PREMIUM", "CUSTOM"):
        return f"Error: Invalid card_design. Must be one of: {['CLASSIC', 'PREMIUM', 'CUSTOM']}"
    design = card_design.upper()
    accounts = rows(db, "accounts")
    if account_id not in accounts:
        return f"Error: Account '{account_id}' not found."
    account = accounts[account_id]
    if account.get("class") != "checking":
        return (f"Error: Debit cards can only be ordered for checking accounts. Account '{account_id}' is a "
                f"{account.get('class')} account.")
    if account.get("status") != "OPEN":
        return f"Error: Account must be OPEN. Account '{account_id}' has status: {account.get('status')}"
    if account.get("user_id") != user_id:
        return f"Error: Account '{account_id}' does not belong to user '{user_id}'."
    try:
        holdings = float(str(account.get("current_holdings", "0")).replace(",", ""))
    except ValueError:
        holdings = 0.0
    if holdings < 25.0:
        return f"Error: Account must have a minimum balance of $25. Current balance: ${holdings:.2f}"
    if any(o.get("account_id") == account_id and o.get("status") == "PENDING"
           for o in rows(db, "debit_card_orders").values()):
        return f"Error: There is already a pending debit card order for account '{account_id}'."
    cards = rows(db, "debit_cards")
    if any(c.get("account_id") == account_id and c.get("status") == "ACTIVE" for c in cards.values()):
        return (f"Error: Account '{account_id}' already has an active debit card. Maximum 1 active card per "
                f"checking account.")
    total = delivery_fee + design_fee + excess
    if total > 0 and holdings < total:
        return f"Error: Insufficient funds for fees. Total fees: ${total:.2f}. Current balance: ${holdings:.2f}"
    order_id = "dcord_" + hex_id(f"debit_card_order:{account_id}:{user_id}:{option}", 12)
    order = {"order_id": order_id, "account_id": account_id, "user_id": user_id, "delivery_option": option,
             "card_design": design, "shipping_address": shipping_address, "delivery_fee": delivery_fee,
             "design_fee": design_fee, "excess_replacement_fee": excess, "total_fee": total, "order_date": TODAY,
             "expected_delivery": times[option], "status": "PENDING"}
    if not add(db, "debit_card_orders", order_id, order):
        return "Error: Failed to create debit card order. Order may already exist."
    if total > 0:
        account["current_holdings"] = f"{holdings - total:.2f}"
        parts = ([f"Delivery ${delivery_fee}"] if delivery_fee > 0 else []) + \
            ([f"Design ${design_fee}"] if design_fee > 0 else []) + \
            ([f"Excess Replacement ${excess:.0f}"] if excess > 0 else [])
        fee_id = f"btxn_dcfee_{order_id[-8:]}"
        add(db, "bank_account_transaction_history", fee_id,
            {"transaction_id": fee_id, "account_id": account_id, "date": TODAY,
             "description": f"DEBIT CARD ORDER FEE - {', '.join(parts)}", "amount": -total,
             "type": "debit_card_fee", "status": "posted"})
    card_id = "dbc_" + hex_id(f"debit_card:{account_id}:{user_id}:{TODAY}", 12)
    users = rows(db, "users")
    holder = users[user_id].get("name", "CARDHOLDER").upper() if user_id in users else "CARDHOLDER"
    month, _day, year = TODAY.split("/")
    reason = _issue_reason([c for c in cards.values() if c.get("account_id") == account_id])
    add(db, "debit_cards", card_id, {
        "card_id": card_id, "account_id": account_id, "user_id": user_id, "cardholder_name": holder,
        "last_4_digits": _digits(f"card_details:{card_id}:last4", 8, 4),
        "cvv": _digits(f"card_details:{card_id}:cvv", 6, 3),
        "status": "PENDING", "issue_date": TODAY, "expiration_date": f"{month}/{_days_in(month)}/{int(year) + 4}",
        "card_design": design, "issue_reason": reason})
    out = ["Debit Card Order Confirmed", f"Order ID: {order_id}", f"Card ID: {card_id}",
           f"Linked Account: {account_id}",
           f"Delivery Option: {option}", f"Card Design: {design}", f"Shipping Address: {shipping_address}",
           f"Expected Delivery: {times[option]}", "",
           "Note: Card will arrive with status PENDING. Customer must call to activate after receiving the card."]
    if total > 0:
        fees = ([f"Delivery: ${delivery_fee}"] if delivery_fee > 0 else []) + \
            ([f"Design: ${design_fee}"] if design_fee > 0 else []) + \
            ([f"Excess Replacement: ${excess:.0f}"] if excess > 0 else [])
        out += [f"Total Fees: ${total:.2f} ({', '.join(fees)}) - CHARGED to account {account_id}",
                f"New Account Balance: ${holdings - total:.2f}"]
    else:
        out.append("Total Fees: $0 (No additional charges)")
    return "\n".join(out)


def _activatable(db, card_id, last_4_digits, expiration_date, cvv, pin, reasons, tool_name):
    """``_validate_activation_common``: (error text, card)."""
    if not all([card_id, last_4_digits, expiration_date, cvv, pin]):
        return "Error: Missing required parameters. Required: card_id, last_4_digits, expiration_date, cvv, pin.", None
    problem = pin_problem(pin)
    if problem:
        return f"Error: {problem}", None
    if not cvv.isdigit() or len(cvv) != 3:
        return "Error: CVV must be exactly 3 digits.", None
    if not last_4_digits.isdigit() or len(last_4_digits) != 4:
        return "Error: Last 4 digits must be exactly 4 digits.", None
    cards = rows(db, "debit_cards")
    if card_id not in cards:
        return f"Error: Debit card '{card_id}' not found.", None
    card = cards[card_id]
    reason = card.get("issue_reason", "new_account")
    if reason not in reasons:
        right = f"activate_debit_card_{ACTIVATOR[reason]}" if reason in ACTIVATOR else "unknown"
        return ((f"Error: Wrong activation tool. This card has issue_reason='{reason}'. Please use {right} instead of "
                f"{tool_name}."), None)
    if card.get("status") == "ACTIVE":
        return f"Error: Debit card '{card_id}' is already active.", None
    if card.get("status") != "PENDING":
        return ((f"Error: Debit card '{card_id}' cannot be activated. Current status: {card.get('status')}. Only "
                f"PENDING cards can be activated."), None)
    if card.get("last_4_digits") != last_4_digits:
        return "Error: Card verification failed. The last 4 digits do not match our records.", None
    account_id = card.get("account_id")
    accounts = rows(db, "accounts")
    if account_id and account_id in accounts and accounts[account_id].get("status") != "OPEN":
        return (f"Error: The linked checking account '{account_id}' is no longer open. Card cannot be activated.",
                None)
    return None, card


def _activate(db, card_id, card, old_status, old_fields):
    """Activate ``card``; the account's other active cards get ``old_status`` and ``old_fields``."""
    card["status"], card["activated_date"] = "ACTIVE", TODAY
    others = []
    for other_id, other in rows(db, "debit_cards").items():
        same_account = other.get("account_id") == card.get("account_id")
        if other_id != card_id and same_account and other.get("status") == "ACTIVE":
            other["status"] = old_status
            other.update(old_fields)
            others.append(other_id)
    return others


@tool(discoverable=True)
def activate_debit_card_8291(db, card_id, last_4_digits, expiration_date, cvv, pin):
    error, card = _activatable(db, card_id, last_4_digits, expiration_date, cvv, pin, ("new_account", "first_card"),
                               "activate_debit_card_8291")
    if error:
        return error
    old = _activate(db, card_id, card, "DEACTIVATED",
                    {"deactivated_date": TODAY, "deactivation_reason": "New card activated"})
    out = ["New Debit Card Activation Successful", f"Card ID: {card_id}", "Status: ACTIVE",
           f"Activation Date: {TODAY}", "", "Your card is now ready to use at any ATM or point of sale terminal.",
           "For security, please sign the back of your card."]
    if old:
        out.append(f"\nNote: Previous card(s) have been deactivated: {', '.join(old)}")
    return "\n".join(out)


@tool(discoverable=True)
def activate_debit_card_8292(db, card_id, last_4_digits, expiration_date, cvv, pin):
    error, card = _activatable(db, card_id, last_4_digits, expiration_date, cvv, pin, ("lost", "stolen", "fraud"),
                               "activate_debit_card_8292")
    if error:
        return error
    reason = card.get("issue_reason", "lost")
    old = _activate(db, card_id, card, "DEACTIVATED", {"deactivated_date": TODAY,
                                                       "deactivation_reason": f"Replacement card activated ({reason})"})
    out = ["Replacement Debit Card Activation Successful", f"Card ID: {card_id}",
           f"Replacement Reason: {titled(reason)}", "Status: ACTIVE", f"Activation Date: {TODAY}", "",
           "Your replacement card is now ready to use.", "", "IMPORTANT SECURITY REMINDERS:",
           "- Please review your recent transactions for any unauthorized charges",
           "- Report any suspicious activity immediately"]
    if reason == "fraud":
        out.append("- Since fraud was suspected, we recommend changing your online banking password")
    if old:
        out.append(f"\nPrevious card(s) have been deactivated for security: {', '.join(old)}")
    return "\n".join(out)


@tool(discoverable=True)
def activate_debit_card_8293(db, card_id, last_4_digits, expiration_date, cvv, pin):
    error, card = _activatable(db, card_id, last_4_digits, expiration_date, cvv, pin,
                               ("expired", "damaged", "upgrade", "bank_reissue"), "activate_debit_card_8293")
    if error:
        return error
    reason = card.get("issue_reason", "expired")
    old = _activate(db, card_id, card, "GRACE_PERIOD", {"grace_period_ends": TODAY,
                                                        "deactivation_reason": f"Reissued card activated ({reason})"})
    out = ["Reissued Debit Card Activation Successful", f"Card ID: {card_id}", f"Reissue Reason: {titled(reason)}",
           "Status: ACTIVE", f"Activation Date: {TODAY}", "", "Your reissued card is now ready to use."]
    if old:
        out += [f"\nNote: Your previous card(s) ({', '.join(old)}) will remain active for 24 hours as a grace period.",
                "After 24 hours, the old card(s) will be automatically deactivated."]
    if reason in ("expired", "bank_reissue"):
        out.append("\nReminder: If your card number changed, please update any recurring payments with your new card "
                   "details.")
    return "\n".join(out)


def _card(db, card_id):
    return rows(db, "debit_cards").get(card_id)


@tool(discoverable=True)
def close_debit_card_4721(db, card_id, reason):
    if not card_id or not reason:
        return "Error: Missing required parameters. Required: card_id, reason."
    reasons = ["lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed", "account_closing"]
    if reason.lower() not in reasons:
        return f"Error: Invalid reason. Must be one of: {reasons}"
    reason = reason.lower()
    card = _card(db, card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    was = card.get("status")
    if was not in ("ACTIVE", "PENDING"):
        return (f"Error: Debit card '{card_id}' cannot be closed. Current status: {was}. Only ACTIVE or PENDING "
                f"cards can be closed.")
    card.update({"status": "CLOSED", "closed_date": TODAY, "closure_reason": reason})
    out = ["Debit Card Closed Successfully", f"Card ID: {card_id}", f"Previous Status: {was}", "New Status: CLOSED",
           f"Closure Reason: {titled(reason)}", f"Closure Date: {TODAY}", ""]
    if reason in ("lost", "stolen", "fraud_suspected"):
        out += ["IMPORTANT: This card has been immediately deactivated for security.",
                "Any pending transactions may still be processed."]
        if reason == "fraud_suspected":
            out += [("Please advise the customer to review recent transactions and file disputes for any unauthorized "
                    "charges."), "Also recommend changing their online banking password."]
    out += ["", ("Note: This card cannot be reactivated. If the customer needs a new card, they can order one through "
            "the standard ordering process."),
            "Any recurring payments linked to this card will need to be updated with new payment information."]
    return "\n".join(out)


@tool(discoverable=True)
def freeze_debit_card_3892(db, card_id):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    card = _card(db, card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") == "FROZEN":
        return f"Error: Debit card '{card_id}' is already frozen."
    if card.get("status") != "ACTIVE":
        return (f"Error: Debit card '{card_id}' cannot be frozen. Current status: {card.get('status')}. Only ACTIVE "
                f"cards can be frozen.")
    card["status"], card["frozen_date"] = "FROZEN", TODAY
    return "\n".join(["Debit Card Frozen Successfully", f"Card ID: {card_id}", "Status: FROZEN",
                      f"Frozen Date: {TODAY}", "", "While frozen:",
                      "- All new purchase transactions will be declined",
                      "- Recurring payments and subscriptions will be declined",
                      "- Pending transactions already authorized may still process", "",
                      "To unfreeze, the customer can call customer service or use the mobile app.",
                      "If the card is confirmed lost or stolen, recommend closing the card permanently instead."])


@tool(discoverable=True)
def unfreeze_debit_card_3893(db, card_id):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    card = _card(db, card_id)
    if card is None:
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") == "ACTIVE":
        return f"Error: Debit card '{card_id}' is already active."
    if card.get("status") != "FROZEN":
        return (f"Error: Debit card '{card_id}' cannot be unfrozen. Current status: {card.get('status')}. Only "
                f"FROZEN cards can be unfrozen.")
    account_id, accounts = card.get("account_id"), rows(db, "accounts")
    if account_id and account_id in accounts and accounts[account_id].get("status") != "OPEN":
        return f"Error: The linked checking account '{account_id}' is no longer open. Card cannot be unfrozen."
    card["status"], card["unfrozen_date"] = "ACTIVE", TODAY
    return "\n".join(["Debit Card Unfrozen Successfully", f"Card ID: {card_id}", "Status: ACTIVE",
                      f"Unfrozen Date: {TODAY}", "", "The card is now active and ready to use immediately.",
                      "All transactions will process normally."])
