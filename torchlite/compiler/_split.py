"""Splitting a compiled function at the statement that holds a graph break.

PyTorch's dynamo resumes after a graph break from the function's bytecode.  torchlite's
capture runs the Python code on value-carrying proxies instead, so it splits at the level of
the function's own statements: when the break happens while statement k of the compiled
function's body runs (itself, or a function it calls), the body becomes three functions,

    pre(<the function's parameters>):  statements 0 .. k-1, returning the live variables
    mid(<those variables>):            statement k, run eagerly every call
    post(<the variables live after>):  statements k+1 .. end

and a call runs pre compiled, mid as plain Python (a `return` inside it returns the call's
result), then post compiled -- which splits again at its own first break, so a function with
two breaks gives three graphs.  Python sees the statements in the order it would have: the
breaking statement's side effects (a print, a data-dependent branch, `.item()`,
`loss.backward()`) happen on every call, with the real values.

The pieces are made from the function's source (its AST, line numbers kept, compiled under
the original file name, so a traceback points at the user's line) with the original globals
and default values.  A function is not split -- it runs eagerly as before, its submodules
compiled one by one -- when its source is not available, when it is a closure, a generator or
a coroutine, when its body defines functions, lambdas or classes, declares global/nonlocal
names or reads its scope whole (locals(), eval) (the pieces would not share their scope),
when it names a private attribute (`self.__n`, which its class mangled),
when a statement before the break can return, when a variable live at the split point may be
unbound there (assigned only in a branch), or when a statement outside the breaking one
assigns an attribute of anything but the module a method is bound to (a graph would not
replay it).
"""
import ast
import copy
import inspect
import textwrap
import types

__all__ = ["UNBOUND", "plan"]


class _Unbound:
    """A variable the breaking statement left unbound: post deletes it again."""

    def __repr__(self):
        return "<unbound>"


UNBOUND = _Unbound()

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_REFUSED = _SCOPES + (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Await)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class Pieces:
    """The split of one function: pre and post are plain functions (compiled by the caller,
    unless empty: pre_empty, post_empty), mid runs eagerly and returns (True, result) for a
    `return`, else (False, values)."""

    def __init__(self, pre, mid, post, statement, pre_empty, post_empty):
        self.pre, self.mid, self.post = pre, mid, post
        self.statement = statement       # the line of the breaking statement, for messages
        self.pre_empty, self.post_empty = pre_empty, post_empty


def plan(func, break_line, bound=False, module=False):
    """The Pieces of plain function `func` around the statement running `break_line` (a line
    number of func's file), or None when func cannot be split (see the module docstring).
    bound: func is called bound to an object (a method): its first parameter stays the
    first parameter of every piece, and the pieces are bound to the same object; module:
    that object is a torchlite Module (assigning its attributes is a graph break)."""
    code = getattr(func, "__code__", None)
    if code is None or code.co_freevars or code.co_flags & (
            inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return None
    fdef, filename = _definition(func)
    if fdef is None:
        return None
    body = fdef.body
    k = next((i for i, s in enumerate(body) if s.lineno <= break_line <= s.end_lineno), None)
    if k is None or (k == 0 and len(body) == 1):
        return None
    if any(isinstance(n, _REFUSED) or _reads_scope(n) or _private(n) for s in body for n in ast.walk(s)):
        return None
    pre, stmt, post = body[:k], body[k], body[k + 1:]
    if any(isinstance(n, ast.Return) for s in pre for n in ast.walk(s)):
        return None
    params = _parameters(fdef.args)
    if _assigns_attributes(pre + post, params[0] if bound and module and params else None):
        return None
    live_mid = sorted((set(params) | _stored(pre)) & _loaded([stmt] + post))
    if set(live_mid) - _definitely_bound(params, pre):
        return None
    live_post = sorted((set(live_mid) | _stored([stmt])) & _loaded(post))
    maybe_unbound = sorted(set(live_post) - _definitely_bound(live_mid, [stmt]))
    if bound:
        if not params:
            return None
        own = params[0]                 # self: bound again to each piece, not passed along
        if own in _stored(body):
            return None
        live_mid = [n for n in live_mid if n != own]
        live_post = [n for n in live_post if n != own]
        lead = [own]
    else:
        lead = []
    first = body[0]
    g = func.__globals__
    name = func.__code__.co_name        # the pieces' code keeps the name (tracebacks, reasons)
    pre_body = pre + [_return_tuple(live_mid, first)]
    pre_f = _function(_def(name, fdef.args, pre_body, first),
                      filename, g, func.__defaults__, func.__kwdefaults__)
    pre_f._tl_split_source = (pre_body, filename)
    mid_f = _function(_def(name, _arguments(lead + live_mid, ["_tl_pack"]),
                           [_ReturnMarker().visit(copy.deepcopy(stmt)), _return_packed(stmt)], stmt),
                      filename, g, None, {"_tl_pack": _packer(live_post)})
    post_body = [_delete_if_unbound(n, stmt) for n in maybe_unbound] + post
    if not post:
        post_body.append(ast.copy_location(ast.Return(value=None), stmt))
    post_f = _function(_def(name, _arguments(lead + live_post, ["_tl_unbound"] if maybe_unbound else []),
                            post_body, post[0] if post else stmt),
                       filename, g, None, {"_tl_unbound": UNBOUND} if maybe_unbound else None)
    post_f._tl_split_source = (post_body, filename)
    # the code keeps the function's name (tracebacks); the functions say which part they are
    # (never "forward": a bound piece is not the module's forward)
    pre_f.__name__ = f"{name} before line {stmt.lineno}"
    mid_f.__name__ = f"{name} line {stmt.lineno}"
    post_f.__name__ = f"{name} after line {stmt.lineno}"
    return Pieces(pre_f, mid_f, post_f, stmt.lineno, not pre, not post)


# ---- reading the function -------------------------------------------------------------------
def _definition(func):
    """(FunctionDef with line numbers of func's file, file name), or (None, None)."""
    kept = getattr(func, "_tl_split_source", None)
    if kept is not None:                # a piece made here: its statements, already placed
        body, filename = kept
        code = func.__code__
        names = code.co_varnames
        args = _arguments(list(names[:code.co_argcount]),
                          list(names[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]))
        fdef = ast.FunctionDef(name=func.__name__, args=args, body=body, decorator_list=[],
                               returns=None, type_comment=None)
        return fdef, filename
    try:
        lines, first = inspect.getsourcelines(func)
        filename = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError):
        return None, None
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError:
        return None, None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) \
            or tree.body[0].name != func.__code__.co_name:
        return None, None
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if _source_changed(func, filename, fdef):
        return None, None
    return fdef, filename


def _source_changed(func, filename, fdef):
    """Whether the file's text no longer gives the code that runs (edited after the import):
    the definition compiled again must give the same instructions on the same names and
    constants (compared by their meaning: the interpreter may have rewritten the running code's
    attribute loads, and jumps are compared by instruction, not byte offset).  Splitting a
    changed text would run code the program never loaded."""
    import __future__
    flags = 0
    for feature in __future__.all_feature_names:
        flags |= getattr(__future__, feature).compiler_flag
    plain = copy.deepcopy(fdef)
    plain.decorator_list = []
    try:
        module = compile(ast.Module(body=[plain], type_ignores=[]), filename, "exec",
                         flags=func.__code__.co_flags & flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return True
    again = next((c for c in module.co_consts if isinstance(c, types.CodeType)), None)
    return again is None or _instructions(again) != _instructions(func.__code__)


def _instructions(code):
    """A code object's instructions as (operation, meaning of the argument), nested code
    objects included."""
    import dis
    ins = [i for i in dis.get_instructions(code) if i.opname not in ("CACHE", "EXTENDED_ARG", "NOP")]
    index = {i.offset: k for k, i in enumerate(ins)}
    jumps = set(dis.hasjrel) | set(dis.hasjabs)
    out = []
    for i in ins:
        arg = i.argval
        if i.opcode in jumps:
            arg = index.get(arg)
        elif isinstance(arg, types.CodeType):
            arg = tuple(_instructions(arg))
        elif not isinstance(arg, (str, int, float, complex, bytes, bool, type(None), tuple, frozenset)):
            arg = repr(arg)
        out.append(({"LOAD_METHOD": "LOAD_ATTR"}.get(i.opname, i.opname), arg))
    return out


def _parameters(args):
    names = [a.arg for a in args.posonlyargs + args.args]
    if args.vararg:
        names.append(args.vararg.arg)
    names += [a.arg for a in args.kwonlyargs]
    if args.kwarg:
        names.append(args.kwarg.arg)
    return names


class _Names(ast.NodeVisitor):
    """The names a list of statements stores (binds or deletes) and loads; a comprehension's
    own variables are its scope's, not the function's."""

    def __init__(self):
        self.stored, self.loaded = set(), set()

    def visit_Name(self, node):
        (self.loaded if isinstance(node.ctx, ast.Load) else self.stored).add(node.id)

    def visit_ExceptHandler(self, node):
        if node.name:
            self.stored.add(node.name)
        self.generic_visit(node)

    def visit_alias(self, node):
        self.stored.add((node.asname or node.name).split(".")[0])

    def _comprehension(self, node):
        inner = _Names()
        for gen in node.generators:
            inner.visit(gen)
        for part in ("elt", "key", "value"):
            if getattr(node, part, None) is not None:
                inner.visit(getattr(node, part))
        own = set()
        for gen in node.generators:
            own |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
        self.loaded |= inner.loaded - own
        self.stored |= inner.stored - own           # (a walrus inside binds in the function)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


def _stored(stmts):
    v = _Names()
    for s in stmts:
        v.visit(s)
    return v.stored


def _loaded(stmts):
    v = _Names()
    for s in stmts:
        v.visit(s)
    return v.loaded


def _reads_scope(node):
    """A call that sees the function's own variables as a whole (locals(), vars() and dir()
    without an argument, eval and exec): each piece has only its share of them."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    name = node.func.id
    return name in ("eval", "exec") or (name in ("locals", "vars", "dir") and not node.args)


def _private(node):
    """A private name (`self.__n`): its class mangled it in the method's code (`_M__n`), the
    pieces, made outside the class, would not."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
    return name is not None and name.startswith("__") and not name.endswith("__")


def _assigns_attributes(stmts, module_self):
    """Whether stmts assign or delete an attribute (`obj.n = v`, `self.steps += 1`): a
    compiled piece would do it at its capture only (a graph does not replay Python's side
    effects), and a capture that breaks after it would have done it once more.  A module's
    own attributes are fine (module_self: the name of the module the method is bound to):
    assigning one is a graph break, raised before the assignment."""
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, (ast.Store, ast.Del)) and not (
                    module_self is not None and isinstance(n.value, ast.Name) and n.value.id == module_self):
                return True
    return False


def _definitely_bound(bound, stmts):
    """The names certainly bound after stmts run from `bound`: what top-level assignments,
    imports and with-statements bind, less what top-level `del` removes (a name first bound
    inside a branch, a loop or a try may be unbound after it)."""
    names = set(bound)
    for s in stmts:
        if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if isinstance(s, ast.AnnAssign) and s.value is None:
                continue
            for t in targets:
                names |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in s.names}
        elif isinstance(s, ast.With):
            for item in s.items:
                if item.optional_vars is not None:
                    names |= {n.id for n in ast.walk(item.optional_vars) if isinstance(n, ast.Name)}
        elif isinstance(s, ast.Delete):
            names -= {n.id for t in s.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        if isinstance(s, ast.Expr) or isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            # a walrus at the top level binds too
            names |= {n.target.id for n in ast.walk(s) if isinstance(n, ast.NamedExpr)}
        # a name deleted anywhere inside the statement (a `del` in a branch) or caught by an
        # `except ... as name` (Python unbinds it when the handler ends) may be unbound after
        # it, even if it was bound before
        names -= _maybe_unbinds(s)
    return names


def _maybe_unbinds(stmt):
    out = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del):
            out.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            out.add(n.name)
    return out


# ---- making the pieces ------------------------------------------------------------------------
class _ReturnMarker(ast.NodeTransformer):
    """`return e` in the breaking statement -> `return (True, e)` (its own scope only)."""

    def visit_Return(self, node):
        value = node.value if node.value is not None else ast.Constant(value=None)
        return ast.copy_location(ast.Return(value=ast.Tuple(elts=[ast.Constant(value=True), value],
                                                             ctx=ast.Load())), node)


def _arguments(names, kwonly):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None,
                         kwonlyargs=[ast.arg(arg=n) for n in kwonly],
                         kw_defaults=[ast.Constant(value=None) for _ in kwonly], kwarg=None,
                         defaults=[])


def _def(name, args, body, where):
    args = _plain_arguments(args)
    fdef = ast.FunctionDef(name=name, args=args, body=body, decorator_list=[], returns=None,
                           type_comment=None)
    return ast.copy_location(fdef, where)


def _plain_arguments(args):
    """The parameters without annotations, and placeholder defaults (the real ones are set on
    the function, so nothing is evaluated again)."""
    def bare(a):
        return ast.arg(arg=a.arg)
    return ast.arguments(posonlyargs=[bare(a) for a in args.posonlyargs],
                         args=[bare(a) for a in args.args],
                         vararg=bare(args.vararg) if args.vararg else None,
                         kwonlyargs=[bare(a) for a in args.kwonlyargs],
                         kw_defaults=[None if d is None else ast.Constant(value=None)
                                      for d in args.kw_defaults],
                         kwarg=bare(args.kwarg) if args.kwarg else None,
                         defaults=[ast.Constant(value=None) for _ in args.defaults])


def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


def _return_tuple(names, where):
    return ast.copy_location(ast.Return(value=ast.Tuple(elts=[_load(n) for n in names],
                                                         ctx=ast.Load())), where)


def _return_packed(where):
    # (False, _tl_pack(locals())): the live variables, UNBOUND for one the statement unbound
    call = ast.Call(func=_load("_tl_pack"), args=[ast.Call(func=_load("locals"), args=[], keywords=[])],
                    keywords=[])
    node = ast.Return(value=ast.Tuple(elts=[ast.Constant(value=False), call], ctx=ast.Load()))
    return ast.copy_location(node, where)


def _packer(names):
    names = tuple(names)

    def pack(frame_locals):
        return tuple(frame_locals.get(n, UNBOUND) for n in names)
    return pack


def _delete_if_unbound(name, where):
    test = ast.Compare(left=_load(name), ops=[ast.Is()], comparators=[_load("_tl_unbound")])
    node = ast.If(test=test, body=[ast.Delete(targets=[ast.Name(id=name, ctx=ast.Del())])], orelse=[])
    return ast.copy_location(node, where)


def _function(fdef, filename, globals_, defaults, kwdefaults):
    """The function of a FunctionDef, compiled under the user's file name (tracebacks show
    the user's lines) and bound to the user's globals."""
    module = ast.fix_missing_locations(ast.Module(body=[fdef], type_ignores=[]))
    scope = {}
    exec(compile(module, filename, "exec"), scope)
    made = scope[fdef.name]
    fn = types.FunctionType(made.__code__, globals_, fdef.name, defaults, None)
    if kwdefaults:
        fn.__kwdefaults__ = dict(kwdefaults)
    return fn
