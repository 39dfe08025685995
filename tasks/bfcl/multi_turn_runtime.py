"""BFCL's multi-turn simulated APIs as a tool environment, and BFCL's multi-turn checker, both run
inside evalkit's sandbox (``evalkit.sandbox.tools``): this file is never imported by evalkit, its
text is the tail of a ``ToolEnv`` source (``multi_turn_env.py``) whose head defines ``_SOURCES``:
``{module name: source}`` of BFCL's ``func_source_code`` modules, taken unchanged from the installed
``bfcl-eval`` package and registered here under their own module names, so their imports of one
another (``long_context``) and pickling of their instances work as in BFCL.

Ported from bfcl_eval (Apache-2.0), eval_checker/multi_turn_eval/: ``execute`` is
``multi_turn_utils.execute_multi_turn_func_call`` on instances kept by the caller (BFCL keeps them
in the module's globals, named after model and entry), ``check`` is
``multi_turn_checker.multi_turn_checker`` with ``state_checker``, ``response_checker`` and their
helpers, message for message. Model calls arrive as BFCL's decoded strings (``name(k=repr(v))``)
and are evaluated as BFCL evaluates them: they are untrusted, which is why this runs in the sandbox.
"""
import copy
import importlib
import inspect
import json
import re
import sys
import types

PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
CLASS_MODULES = {"GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api", "MessageAPI": "message_api",
                 "TwitterAPI": "posting_api", "TicketAPI": "ticket_api", "TradingBot": "trading_bot",
                 "TravelAPI": "travel_booking", "VehicleControlAPI": "vehicle_control"}
STATELESS_CLASSES = ["MathAPI"]
NOT_ALLOWED = ["kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"]


def _no_subprocess(name):
    raise RuntimeError("subprocess is not available in evalkit's tool sandbox")


def _install(sources):
    # gorilla_file_system imports subprocess and never uses it; the sandbox refuses that import
    if "subprocess" not in sys.modules:
        stub = types.ModuleType("subprocess")
        stub.__getattr__ = _no_subprocess
        sys.modules["subprocess"] = stub
    parts = PREFIX.split(".")
    for i in range(1, len(parts) + 1):
        name = ".".join(parts[:i])
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = []
            sys.modules[name] = pkg
    for short, source in sources:  # in dependency order (long_context first)
        name = f"{PREFIX}.{short}"
        if name in sys.modules:
            continue
        mod = types.ModuleType(name)
        mod.__file__ = f"<bfcl_eval {short}.py>"
        sys.modules[name] = mod
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)


if "_SOURCES" in globals():  # defined by the head of the environment's source
    _install(_SOURCES)  # noqa: F821


def instances(config):
    """The involved classes' instances, each given its scenario as BFCL's executor does."""
    out = {}
    for class_name in config["involved_classes"]:
        module = importlib.import_module(f"{PREFIX}.{CLASS_MODULES[class_name]}")
        instance = getattr(module, class_name)()
        if class_name not in STATELESS_CLASSES:
            instance._load_scenario(copy.deepcopy(config["initial_config"].get(class_name, {})),
                                    long_context=config["long_context"])
        out[class_name] = instance
    return out


def _process_method_calls(function_call_string, instance_mapping):
    def replace_function(match):
        func_name = match.group(1)
        if func_name in instance_mapping:
            return f"{instance_mapping[func_name]}.{func_name}"
        return func_name

    return re.sub(r"\b([a-zA-Z_]\w*)\s*(?=\()", replace_function, function_call_string)


def execute(involved_instances, func_call_list):
    """BFCL's execution results of the calls (strings), in order, on these instances."""
    names = {"copy": copy, "importlib": importlib, "inspect": inspect, "json": json, "re": re}
    mapping = {}
    for class_name, instance in involved_instances.items():
        var = f"evalkit_{class_name}_instance"
        names[var] = instance
        for method_name, _ in inspect.getmembers(instance, predicate=inspect.ismethod):
            if not method_name.startswith("_"):
                mapping[method_name] = var
    results = []
    for func_call in func_call_list:
        func_call = _process_method_calls(func_call, mapping)
        try:
            head = func_call
            if "(" in head:
                head = head.split("(")[0]
            if "." in head:
                head = head.split(".")[1]
            if head in NOT_ALLOWED:
                raise Exception(f"Function call {head} is not allowed.")
            result = eval(func_call, names)
            if type(result) == str:
                pass
            elif type(result) == dict:
                try:
                    result = json.dumps(result)
                except Exception:
                    result = str(result)
            else:
                result = str(result)
            results.append(result)
        except Exception as e:
            results.append(f"Error during execution: {str(e)}")
    return results


def call_string(name, arguments):
    """BFCL's ``convert_to_function_call`` of one call."""
    return f"{name}({','.join([f'{k}={repr(v)}' for k, v in arguments.items()])})"


def _public(instance):
    return {k: v for k, v in vars(instance).items() if not k.startswith("_")}


def _is_empty_execute_response(input_list):
    return len(input_list) == 0 or (len(input_list) == 1 and len(input_list[0]) == 0)


def _compare_instances(model_object, ground_truth_object):
    differences = {}
    for attr_name in vars(ground_truth_object):
        if attr_name.startswith("_"):
            continue
        model_attr, ground_truth_attr = getattr(model_object, attr_name), getattr(ground_truth_object, attr_name)
        if model_attr != ground_truth_attr:
            differences[attr_name] = {"model": repr(model_attr)[:500], "ground_truth": repr(ground_truth_attr)[:500]}
    return not differences, differences


def _is_subsequence_unordered(list1, list2):
    list2_copy = list2[:]
    missing = []
    for item in list1:
        try:
            list2_copy.remove(item)
        except ValueError:
            missing.append(item)
    return not missing, missing


def check(entry):
    """BFCL's decoding of the model's steps and its ``multi_turn_checker``: ``entry["model"]`` holds
    per turn the steps, each a list of ``[name, arguments]`` calls, ``entry["ground_truth"]`` per turn
    the possible answer's call strings. The verdict carries the decoded steps (``decoded``)."""
    decoded = [[[call_string(n, a) for n, a in step] for step in turn] for turn in entry["model"]]
    verdict = _checker(dict(entry, model=decoded))
    verdict["decoded"] = decoded
    return verdict


def _checker(entry):
    model_instances, ground_truth_instances = instances(entry), instances(entry)
    all_turn_model_execution_results = []
    for turn_index, ground_truth_calls in enumerate(entry["ground_truth"]):
        steps = entry["model"][turn_index]
        for step in steps:
            all_turn_model_execution_results.extend(execute(model_instances, step))
        ground_truth_results = execute(ground_truth_instances, ground_truth_calls)
        if ground_truth_calls and (not steps or _is_empty_execute_response(steps)):
            return {"valid": False, "error_type": "multi_turn:empty_turn_model_response", "turn": turn_index,
                    "error_message": f"Model response list is empty for turn {turn_index}"}
        if not ground_truth_calls:
            continue
        for class_name, ground_truth_instance in ground_truth_instances.items():
            valid, differences = _compare_instances(model_instances[class_name], ground_truth_instance)
            if not valid:
                return {"valid": False, "error_type": "multi_turn:instance_state_mismatch", "turn": turn_index,
                        "error_message": f"Model instance for {class_name} does not match the state with ground "
                                         "truth instance.", "differences": differences}
        valid, missing = _is_subsequence_unordered(ground_truth_results, all_turn_model_execution_results)
        if not valid:
            return {"valid": False, "error_type": "multi_turn:execution_response_mismatch", "turn": turn_index,
                    "error_message": "Model response execution results so far does not contain all the ground "
                                     f"truth response execution results for turn {turn_index}.",
                    "missing_items": [m[:500] for m in missing]}
    return {"valid": True}


# ---- the ToolEnv protocol (evalkit.taskapi.agent) ----
def setup(config):
    if config.get("checker"):
        return {"checker": config}
    return {"instances": instances(config)}


def call(state, name, arguments):
    if "checker" in state:
        if name != "check":
            raise KeyError(name)
        return json.dumps(check(dict(state["checker"], **arguments)))
    return execute(state["instances"], [call_string(name, arguments)])[0]


def snapshot(state):
    """The public state of the stateful instances (what BFCL's inference log shows)."""
    return {name: _public(inst) for name, inst in state.get("instances", {}).items()
            if name not in STATELESS_CLASSES}
