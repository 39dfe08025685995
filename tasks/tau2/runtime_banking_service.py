"""τ²-bench's banking_knowledge discoverable agent tools that service a debit card (``tau2/domains/
banking_knowledge/tools.py`` as the reference; MIT): disputes, the recurring-payment block, fraud alerts,
PINs, the card list and temporary limit increases, as evalkit's own code over the plain-data database.
Part of the banking sandbox source; never imported by evalkit."""
# one sandbox source: names defined in the other runtime_banking*.py parts (or appended by env.py)
# ruff: noqa: F821


DEBIT_DISPUTE_CATEGORIES = ["unauthorized_transaction", "atm_cash_discrepancy", "atm_deposit_not_credited",
                            "duplicate_charge", "incorrect_amount", "goods_services_not_received",
                            "recurring_charge_after_cancellation", "card_present_fraud", "card_not_present_fraud"]
DEBIT_TRANSACTION_TYPES = ["pin_purchase", "signature_purchase", "online_purchase", "atm_withdrawal", "atm_deposit",
                           "recurring_payment", "person_to_person"]
FRAUD_CATEGORIES = ("unauthorized_transaction", "card_present_fraud", "card_not_present_fraud")
#: default daily ATM limits by account level, when the card has none of its own
DEFAULT_ATM_LIMITS = {"blue account": 500, "green account": 600, "light blue account": 400,
                      "green fee-free account": 500, "evergreen account": 750, "bluest account": 1500,
                      "dark green account": 300, "gold years account": 600, "purple account": 1000}


@tool(discoverable=True)
def file_debit_card_transaction_dispute_6281(db, transaction_id, account_id, card_id, user_id, dispute_category,
                                             transaction_date, discovery_date, disputed_amount, transaction_type,
                                             card_in_possession, pin_compromised, contacted_merchant,
                                             police_report_filed, written_statement_provided,
                                             provisional_credit_eligible, customer_max_liability_amount, card_action):
    if not all([transaction_id, account_id, card_id, user_id, dispute_category, transaction_date, discovery_date,
                disputed_amount, transaction_type, pin_compromised, card_action]):
        return "Error: Missing required parameters."
    if customer_max_liability_amount is None:
        return "Error: customer_max_liability_amount is required."
    if None in (card_in_possession, contacted_merchant, police_report_filed, written_statement_provided):
        return ("Error: card_in_possession, contacted_merchant, police_report_filed, and written_statement_provided "
                "are required boolean fields.")
    for value, allowed, what in (
            (dispute_category, DEBIT_DISPUTE_CATEGORIES, "dispute_category"),
            (transaction_type, DEBIT_TRANSACTION_TYPES, "transaction_type"),
            (pin_compromised, ["yes_shared", "yes_observed", "no", "unknown"], "pin_compromised"),
            (card_action, ["keep_active", "freeze_pending_investigation", "close_and_reissue"], "card_action")):
        if value not in allowed:
            return f"Error: Invalid {what}. Must be one of: {allowed}"
    if disputed_amount <= 0:
        return "Error: disputed_amount must be a positive number."
    did = dispute_id(user_id, transaction_id)
    fraud, shared = dispute_category in FRAUD_CATEGORIES, pin_compromised == "yes_shared"
    record = {"dispute_id": did, "transaction_id": transaction_id, "account_id": account_id, "card_id": card_id,
              "user_id": user_id, "dispute_category": dispute_category, "transaction_date": transaction_date,
              "discovery_date": discovery_date, "disputed_amount": disputed_amount,
              "transaction_type": transaction_type, "card_in_possession": card_in_possession,
              "pin_compromised": pin_compromised, "contacted_merchant": contacted_merchant,
              "police_report_filed": police_report_filed, "written_statement_provided": written_statement_provided,
              "provisional_credit_eligible": provisional_credit_eligible,
              "provisional_credit_issued": provisional_credit_eligible,
              "provisional_credit_amount": disputed_amount if provisional_credit_eligible else None,
              "customer_max_liability_amount": customer_max_liability_amount, "card_action": card_action,
              "is_fraud_category": fraud, "pin_shared_voluntarily": shared, "submitted_at": TODAY,
              "status": "OPEN"}
    if not add(db, "debit_card_disputes", did, record):
        return "Error: Dispute may have already been filed for this transaction."
    out = [f"Dispute ID: {did}", f"Transaction: {transaction_id}", f"Account: {account_id}",
           f"Category: {titled(dispute_category)}", f"Disputed Amount: ${disputed_amount:.2f}",
           f"Card Action: {titled(card_action)}"]
    out.append(f"Provisional Credit: ISSUED - ${disputed_amount:.2f} credited within 10 business days per Regulation E."
               if provisional_credit_eligible else
               "Provisional Credit: Not eligible - see Debit Card Provisional Credit Guidelines for details.")
    if shared:
        out.append("WARNING: Customer indicated PIN was shared voluntarily. This may affect liability determination.")
    if fraud and not police_report_filed and disputed_amount > 500:
        out.append("RECOMMENDATION: For fraud disputes over $500, filing a police report is recommended.")
    return "\n".join(out)


@tool(discoverable=True)
def set_debit_card_recurring_block_7382(db, card_id, block_recurring):
    if not card_id:
        return "Error: Missing required parameter: card_id"
    card = rows(db, "debit_cards").get(card_id)
    if not card:
        return f"Error: Debit card '{card_id}' not found."
    status = card.get("status", "").upper()
    if status != "ACTIVE":
        return (f"Error: Cannot update recurring block settings for a card with status '{status}'. Card must be "
                f"ACTIVE.")
    card["recurring_blocked"] = block_recurring
    if block_recurring:
        return (f"Recurring payments BLOCKED for debit card {card_id}.\nAll recurring/subscription charges will be "
                f"declined.\nOne-time purchases are not affected.\nThis change takes effect within 24 hours.")
    return (f"Recurring payments UNBLOCKED for debit card {card_id}.\nRecurring/subscription charges will now be "
            f"allowed.\nThis change takes effect within 24 hours.")


@tool(discoverable=True)
def clear_debit_card_fraud_alert_4892(db, card_id, reason):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    if not reason:
        return "Error: Missing required parameter: reason."
    if reason not in ("customer_verified", "velocity_clear"):
        return f"Error: Invalid reason '{reason}'. Must be one of: customer_verified, velocity_clear"
    card = rows(db, "debit_cards").get(card_id)
    if card_id not in rows(db, "debit_cards"):
        return f"Error: Debit card '{card_id}' not found."
    if reason == "velocity_clear":
        if not card.get("velocity_blocked", False):
            return f"Error: Debit card '{card_id}' does not have an active velocity block."
        card["velocity_blocked"], card["velocity_cleared_date"] = False, TODAY
        return "\n".join(["Velocity Block Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
                          "The card is now unblocked and ready for normal use.",
                          "The velocity monitoring will continue - if the same unusual patterns recur,",
                          "the card may be blocked again automatically."])
    if not card.get("fraud_alert_active", False):
        return f"Error: Debit card '{card_id}' does not have an active fraud alert."
    if card.get("alert_source") == "bank_initiated":
        return ("Error: BANK_INITIATED_ALERT - This fraud alert was initiated by the bank's fraud detection system "
                "and cannot be cleared by customer service agents. Please transfer the customer to the security team "
                "using transfer_to_human_agents.")
    card.update({"fraud_alert_active": False, "alert_source": None, "fraud_alert_cleared_date": TODAY})
    return "\n".join(["Fraud Alert Cleared Successfully", f"Card ID: {card_id}", f"Cleared Date: {TODAY}", "",
                      "The fraud alert has been removed from the card.", "All transactions will process normally.", "",
                      "Remind the customer to review recent transactions and report any unauthorized charges."])


PIN_DONE = ("The new PIN is effective immediately.",)
PIN_AFTER = ("Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.", "",
             "Security reminder: Never share your PIN with anyone.")


@tool(discoverable=True)
def reset_debit_card_pin_6284(db, card_id, last_4_digits, new_pin):
    if not all([card_id, last_4_digits, new_pin]):
        return "Error: Missing required parameters. Required: card_id, last_4_digits, new_pin."
    if not last_4_digits.isdigit() or len(last_4_digits) != 4:
        return "Error: Last 4 digits must be exactly 4 digits."
    problem = pin_problem(new_pin)
    if problem:
        return f"Error: {problem}"
    card = rows(db, "debit_cards").get(card_id)
    if card_id not in rows(db, "debit_cards"):
        return f"Error: Debit card '{card_id}' not found."
    if card.get("last_4_digits") != last_4_digits:
        return "Error: Card verification failed. The last 4 digits do not match our records."
    if card.get("status") != "ACTIVE":
        return (f"Error: Cannot reset PIN. Card status is {card.get('status')}. Only ACTIVE cards can have their PIN "
                f"reset.")
    card.update({"pin_last_changed": TODAY, "pin_locked": False, "pin_attempts_remaining": 3})
    return "\n".join(["Debit Card PIN Reset Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
                      *PIN_DONE, "Your card has been unlocked and is ready to use.", *PIN_AFTER])


@tool(discoverable=True)
def change_debit_card_pin_6285(db, card_id, current_pin, new_pin):
    if not all([card_id, current_pin, new_pin]):
        return "Error: Missing required parameters. Required: card_id, current_pin, new_pin."
    if not current_pin.isdigit() or len(current_pin) != 4:
        return "Error: Current PIN must be exactly 4 digits."
    problem = pin_problem(new_pin)
    if problem:
        return f"Error: {problem}"
    if current_pin == new_pin:
        return "Error: New PIN must be different from current PIN."
    card = rows(db, "debit_cards").get(card_id)
    if card_id not in rows(db, "debit_cards"):
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") != "ACTIVE":
        return (f"Error: Cannot change PIN. Card status is {card.get('status')}. Only ACTIVE cards can have their PIN "
                f"changed.")
    card["pin_last_changed"] = TODAY
    return "\n".join(["Debit Card PIN Changed Successfully", f"Card ID: {card_id}", f"PIN Changed: {TODAY}", "",
                      *PIN_DONE, *PIN_AFTER])


@tool(discoverable=True)
def get_debit_cards_by_account_id_7823(db, account_id):
    if not account_id:
        return "Error: Missing required parameter 'account_id'."
    accounts = rows(db, "accounts")
    if account_id not in accounts:
        return f"Error: Account '{account_id}' not found."
    if accounts[account_id].get("class", "").lower() not in ("checking", "business_checking"):
        return (f"Error: Account '{account_id}' is not a checking account. Debit cards are only available for "
                f"checking accounts.")
    listed = []
    for card_id, card in rows(db, "debit_cards").items():
        if card.get("account_id") != account_id:
            continue
        info = {"card_id": card_id, **card}
        if "last_4_digits" in info and "card_number_last_4" not in info:
            info["card_number_last_4"] = info.pop("last_4_digits")
        if "issue_date" in info and "date_issued" not in info:
            info["date_issued"] = info.pop("issue_date")
        elif "created_date" in info and "date_issued" not in info:
            info["date_issued"] = info.pop("created_date")
        listed.append(info)
    if not listed:
        return f"No debit cards found for account '{account_id}'."
    listed.sort(key=lambda c: c.get("date_issued") or "", reverse=True)
    return json.dumps(listed, indent=2)


@tool(discoverable=True)
def request_temporary_debit_card_limit_increase_8374(db, card_id, limit_type, new_limit):
    if not card_id:
        return "Error: Missing required parameter: card_id."
    if not limit_type:
        return "Error: Missing required parameter: limit_type."
    if limit_type not in ("atm", "purchase"):
        return f"Error: Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'."
    if new_limit is None:
        return "Error: Missing required parameter: new_limit."
    try:
        new_limit = int(new_limit)
    except (ValueError, TypeError):
        return f"Error: new_limit must be an integer, got '{new_limit}'."
    if new_limit <= 0:
        return "Error: new_limit must be a positive amount."
    card = rows(db, "debit_cards").get(card_id)
    if card_id not in rows(db, "debit_cards"):
        return f"Error: Debit card '{card_id}' not found."
    if card.get("status") != "ACTIVE":
        return (f"Error: Debit card '{card_id}' is not active. Current status: {card.get('status')}. Only ACTIVE "
                f"cards can have limit increases.")
    account_id, accounts = card.get("account_id"), rows(db, "accounts")
    if not account_id or account_id not in accounts:
        return f"Error: Could not find linked account for debit card '{card_id}'."
    account = accounts[account_id]
    if account.get("status") != "OPEN":
        return (f"Error: The linked account '{account_id}' is not in good standing. Account status: "
                f"{account.get('status')}.")
    opened = account.get("date_opened")
    if opened:
        try:
            age = (datetime.datetime.strptime(TODAY, "%m/%d/%Y") - datetime.datetime.strptime(opened, "%m/%d/%Y")).days
            if age < 60:
                return (f"Error: Account must be at least 60 days old for a temporary limit increase. Account age: "
                        f"{age} days.")
        except ValueError:
            pass
    if limit_type == "atm":
        current, field, label = card.get("daily_atm_limit"), "daily_atm_limit", "Daily ATM Withdrawal Limit"
        if current is None:
            level = account.get("level", "").lower()
            if "light green" in level:
                return ("Error: Light Green Account (teen checking) cards have policy-based limits that cannot be "
                        "modified. The daily ATM withdrawal limit of $150 is fixed by account policy for safety "
                        "reasons. The customer may request the parent/guardian to withdraw cash from their own "
                        "account if needed.")
            current = DEFAULT_ATM_LIMITS.get(level)
            if current is None:
                return (f"Error: Could not determine the default ATM limit for account type '{account.get('level')}'. "
                        f"Please verify the account type.")
    else:
        current, field, label = card.get("daily_purchase_limit"), "daily_purchase_limit", "Daily Purchase Limit"
    if current is None:
        return (f"Error: The card does not have a {label.lower()} configured. This may be a restricted account type "
                f"where limits are set by account policy and cannot be modified.")
    cap = int(current * 1.5)
    if new_limit > cap:
        return (f"Error: Requested limit ${new_limit} exceeds the maximum allowed temporary increase. "
                f"Maximum temporary limit is ${cap} (150% of current ${current} limit).")
    if new_limit <= current:
        return f"Error: Requested limit ${new_limit} is not higher than the current limit of ${current}."
    card[field] = new_limit
    card[f"temporary_{limit_type}_limit_increase"] = True
    card[f"original_{limit_type}_limit"] = current
    card[f"temporary_{limit_type}_limit_expires"] = TODAY
    return "\n".join([
        f"Temporary {label} Increase Granted Successfully", f"Card ID: {card_id}", f"Previous Limit: ${current}",
        f"New Temporary Limit: ${new_limit}", f"Increase Amount: ${new_limit - current}", "", "Important Information:",
        "- This temporary increase expires in 24 hours", f"- After expiration, the limit will revert to ${current}",
        "- Only one temporary increase is allowed per 24-hour period", "",
        "Note: If the customer is at a third-party (non-Rho-Bank) ATM, that ATM may have its own",
        "per-transaction or daily limits that Rho-Bank cannot override. The customer may need to",
        "use a Rho-Bank ATM or make multiple smaller withdrawals at third-party ATMs."])
