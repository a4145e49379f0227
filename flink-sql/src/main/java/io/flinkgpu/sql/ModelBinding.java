package io.flinkgpu.sql;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.types.logical.LogicalTypeRoot;

/**
 * A model's INPUT and OUTPUT columns bound to its tensors, checked when the query is planned:
 * by name when every column is named after a tensor, else by position (then the counts must
 * match). With {@code on-error = ERROR_COLUMN} one STRING OUTPUT column carries a row's error.
 */
final class ModelBinding implements Serializable {
    private static final long serialVersionUID = 1L;

    final List<TensorColumn> inputs;
    /** Per OUTPUT column position: its tensor, or null for the error column. */
    final List<TensorColumn> outputs;
    /** The error column's position in OUTPUT, or -1. */
    final int errorColumn;

    private ModelBinding(List<TensorColumn> inputs, List<TensorColumn> outputs, int errorColumn) {
        this.inputs = inputs;
        this.outputs = outputs;
        this.errorColumn = errorColumn;
    }

    static ModelBinding bind(String model, ModelConfig config, ResolvedSchema input, ResolvedSchema output,
            OnnxModelOptions.OnError onError, String errorColumnName) {
        List<Column> in = input.getColumns().stream().filter(Column::isPhysical).toList();
        List<Column> out = output.getColumns().stream().filter(Column::isPhysical).toList();
        int errorAt = -1;
        if (onError == OnnxModelOptions.OnError.ERROR_COLUMN) {
            for (int i = 0; i < out.size(); i++) {
                if (out.get(i).getName().equals(errorColumnName)) {
                    errorAt = i;
                }
            }
            if (errorAt < 0) {
                throw new ValidationException("Model '" + model + "': on-error = ERROR_COLUMN needs an OUTPUT column '"
                        + errorColumnName + "' of type STRING (or set 'error-column')");
            }
            LogicalTypeRoot root = out.get(errorAt).getDataType().getLogicalType().getTypeRoot();
            if (root != LogicalTypeRoot.VARCHAR && root != LogicalTypeRoot.CHAR) {
                throw new ValidationException("Model '" + model + "': the error column '" + errorColumnName
                        + "' must be STRING, not " + out.get(errorAt).getDataType());
            }
        }
        List<TensorColumn> inputs = bindSide(model, "INPUT", in, -1, config.inputs(), true);
        List<TensorColumn> outputs = bindSide(model, "OUTPUT", out, errorAt, config.outputs(), false);
        return new ModelBinding(inputs, outputs, errorAt);
    }

    private static List<TensorColumn> bindSide(String model, String side, List<Column> columns, int skip,
            List<TensorSpec> tensors, boolean allTensors) {
        List<Column> data = new ArrayList<>();
        for (int i = 0; i < columns.size(); i++) {
            if (i != skip) {
                data.add(columns.get(i));
            }
        }
        Map<String, TensorSpec> byName = new HashMap<>();
        tensors.forEach(t -> byName.put(t.name(), t));
        boolean named = !data.isEmpty() && data.stream().allMatch(c -> byName.containsKey(c.getName()));
        String declared = tensors.stream().map(TensorSpec::toString).collect(Collectors.joining(", "));
        List<TensorSpec> chosen = new ArrayList<>();
        if (named) {
            for (Column c : data) {
                chosen.add(byName.get(c.getName()));
            }
            if (allTensors && data.size() != tensors.size()) {
                Set<String> given = data.stream().map(Column::getName).collect(Collectors.toSet());
                String missing = tensors.stream().map(TensorSpec::name).filter(n -> !given.contains(n))
                        .collect(Collectors.joining(", "));
                throw new ValidationException("Model '" + model + "': " + side + " lacks the model's input(s) "
                        + missing + "; the model takes " + declared);
            }
        } else {
            if (data.size() != tensors.size()) {
                throw new ValidationException("Model '" + model + "': " + side + " declares " + data.size()
                        + " column(s) that are not all named after the model's tensors, so they map by position, "
                        + "but the model has " + tensors.size() + ": " + declared);
            }
            chosen.addAll(tensors);
        }
        List<TensorColumn> bound = new ArrayList<>();
        int d = 0;
        for (int i = 0; i < columns.size(); i++) {
            if (i == skip) {
                bound.add(null);
                continue;
            }
            Column c = columns.get(i);
            bound.add(TensorColumn.bind(side, c.getName(), c.getDataType().getLogicalType(), chosen.get(d++)));
        }
        return bound;
    }

    /** The output tensor a column reads, by the tensor's name. */
    static Tensor find(List<Tensor> tensors, String name) {
        for (Tensor t : tensors) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }
}
