// The Python side of coil's C++ wrappers: one small library, built once per
// environment, that calls any wrapper library's coil_run from Python.
//
// A wrapper library (runtime/cpp/coil_runtime.h) has no Python in it, so that a
// C++ program can load it alone; this bridge converts between Python objects and
// c10::IValues around its coil_run. Python loads it with ctypes.PyDLL (the GIL
// is held on entry; Python errors are raised from the NULL return) and calls
//
//   coil_bridge_call(run, args, input_error) -> list
//
// with `run` the address of a wrapper's coil_run, `args` a list of tensors,
// ints, floats, bools or None (emptied before the wrapper runs, as the Python
// wrapper's call(args) clears it, so inputs can be freed early) and
// `input_error` the exception class for inputs that do not match
// (coil.runtime.wrapper.CoilInputError).

#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>

#include <string>
#include <vector>

namespace {

using RunFn = int (*)(std::vector<c10::IValue>*, std::vector<c10::IValue>*, std::string*);

bool to_ivalue(PyObject* obj, c10::IValue* out, Py_ssize_t index) {
  if (THPVariable_Check(obj)) {
    *out = THPVariable_Unpack(obj);
  } else if (obj == Py_None) {
    *out = c10::IValue();
  } else if (PyBool_Check(obj)) {
    *out = c10::IValue(obj == Py_True);
  } else if (PyLong_Check(obj)) {
    long long value = PyLong_AsLongLong(obj);
    if (value == -1 && PyErr_Occurred()) return false;
    *out = c10::IValue(static_cast<int64_t>(value));
  } else if (PyFloat_Check(obj)) {
    *out = c10::IValue(PyFloat_AsDouble(obj));
  } else {
    PyErr_Format(PyExc_TypeError, "coil C++ wrapper: input %zd is a %s; it takes tensors, ints, "
                 "floats, bools and None", index, Py_TYPE(obj)->tp_name);
    return false;
  }
  return true;
}

PyObject* from_ivalue(const c10::IValue& value) {
  if (value.isTensor()) return THPVariable_Wrap(value.toTensor());
  if (value.isNone()) Py_RETURN_NONE;
  if (value.isBool()) return PyBool_FromLong(value.toBool());
  if (value.isInt()) return PyLong_FromLongLong(value.toInt());
  if (value.isDouble()) return PyFloat_FromDouble(value.toDouble());
  PyErr_Format(PyExc_TypeError, "coil C++ wrapper: an output is a %s", value.tagKind().c_str());
  return nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) PyObject* coil_bridge_call(
    void* run, PyObject* args, PyObject* input_error) {
  if (!PyList_Check(args)) {
    PyErr_SetString(PyExc_TypeError, "coil C++ wrapper: call(args) takes a list");
    return nullptr;
  }
  Py_ssize_t n = PyList_GET_SIZE(args);
  std::vector<c10::IValue> inputs(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (!to_ivalue(PyList_GET_ITEM(args, i), &inputs[i], i)) return nullptr;
  }
  if (PyList_SetSlice(args, 0, n, nullptr) != 0) return nullptr;
  std::vector<c10::IValue> outputs;
  std::string error;
  int status;
  Py_BEGIN_ALLOW_THREADS;
  status = reinterpret_cast<RunFn>(run)(&inputs, &outputs, &error);
  Py_END_ALLOW_THREADS;
  if (status != 0) {
    PyObject* type = status == 1 ? input_error : status == 3 ? PyExc_IndexError : PyExc_RuntimeError;
    PyErr_SetString(type, error.c_str());
    return nullptr;
  }
  PyObject* result = PyList_New(static_cast<Py_ssize_t>(outputs.size()));
  if (result == nullptr) return nullptr;
  for (size_t i = 0; i < outputs.size(); ++i) {
    PyObject* item = from_ivalue(outputs[i]);
    if (item == nullptr) {
      Py_DECREF(result);
      return nullptr;
    }
    PyList_SET_ITEM(result, static_cast<Py_ssize_t>(i), item);
  }
  return result;
}
