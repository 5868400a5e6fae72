// Feeds record values to Flink Agents 0.2.0's own Kafka deserializer (ActionStateKafkaSeder, from the
// flink-agents 0.2.0 wheel's dist jar) and prints what it read, one JSON object per input line.
//
// Our code, compiled by tests/engine020/test_java_reads_020.py with javac against the wheel's jars at test
// time; nothing upstream is copied. Input: one base64 record value per line on stdin. Output per line:
//   {"ok": false, "error": "<exception chain>"}                          the deserializer refused it
//   {"ok": true, "reserialized": "<base64 of seder.serialize(state)>",   what 0.2.0 writes back
//    "taskEvent": EVENT|null, "outputEvents": [EVENT...],
//    "sensory": [UPDATE...], "shortTerm": [UPDATE...], "calls": [CALL...], "completed": bool}
//   EVENT  = {"class", "id", "eventType", "event": base64 pickle, "eventJsonStr"} (the last three for PythonEvent)
//   UPDATE = {"path", "value", "valueClass"}: the Java object 0.2.0 hands to the agent, and its class
//   CALL   = {"functionId", "argsDigest", "resultPayload", "exceptionPayload", "success"}
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.agents.api.Event;
import org.apache.flink.agents.api.context.MemoryUpdate;
import org.apache.flink.agents.runtime.actionstate.ActionState;
import org.apache.flink.agents.runtime.actionstate.ActionStateKafkaSeder;
import org.apache.flink.agents.runtime.actionstate.CallResult;
import org.apache.flink.agents.runtime.python.event.PythonEvent;

public class Read020 {
    private static final ObjectMapper OUT = new ObjectMapper();

    private static String b64(byte[] data) {
        return data == null ? null : Base64.getEncoder().encodeToString(data);
    }

    private static Map<String, Object> event(Event e) {
        if (e == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("class", e.getClass().getName());
        m.put("id", String.valueOf(e.getId()));
        m.put("attributes", e.getAttributes());
        if (e instanceof PythonEvent) {
            PythonEvent p = (PythonEvent) e;
            m.put("eventType", p.getEventType());
            m.put("event", b64(p.getEvent()));
            m.put("eventJsonStr", p.getEventJsonStr());
        }
        return m;
    }

    private static List<Object> updates(List<MemoryUpdate> us) {
        List<Object> out = new ArrayList<>();
        for (MemoryUpdate u : us) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", u.getPath());
            m.put("value", u.getValue());
            m.put("valueClass", u.getValue() == null ? null : u.getValue().getClass().getName());
            out.add(m);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        ActionStateKafkaSeder seder = new ActionStateKafkaSeder();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, Object> out = new LinkedHashMap<>();
            try {
                ActionState s = seder.deserialize("topic", Base64.getDecoder().decode(line.trim()));
                out.put("ok", true);
                out.put("reserialized", b64(seder.serialize("topic", s)));
                out.put("taskEvent", event(s.getTaskEvent()));
                List<Object> outputs = new ArrayList<>();
                for (Event e : s.getOutputEvents()) {
                    outputs.add(event(e));
                }
                out.put("outputEvents", outputs);
                out.put("sensory", updates(s.getSensoryMemoryUpdates()));
                out.put("shortTerm", updates(s.getShortTermMemoryUpdates()));
                List<Object> calls = new ArrayList<>();
                for (CallResult c : s.getCallResults()) {
                    Map<String, Object> m = new LinkedHashMap<>();
                    m.put("functionId", c.getFunctionId());
                    m.put("argsDigest", c.getArgsDigest());
                    m.put("resultPayload", b64(c.getResultPayload()));
                    m.put("exceptionPayload", b64(c.getExceptionPayload()));
                    m.put("success", c.isSuccess());
                    calls.add(m);
                }
                out.put("calls", calls);
                out.put("completed", s.isCompleted());
            } catch (Throwable t) {
                StringBuilder chain = new StringBuilder();
                for (Throwable c = t; c != null; c = c.getCause()) {
                    chain.append(chain.length() == 0 ? "" : " <- ").append(c.getClass().getName()).append(": ")
                            .append(String.valueOf(c.getMessage()).split("\n")[0]);
                }
                out.clear();
                out.put("ok", false);
                out.put("error", chain.toString());
            }
            System.out.println(OUT.writeValueAsString(out));
        }
    }
}
