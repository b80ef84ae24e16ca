package console

import (
	"fmt"
	"net/http"
	"strconv"
)

// taskPages serves the tasks and cancelling one.
type taskPages struct{ *console }

func (c taskPages) tasks() TasksProps {
	return TasksProps{Now: c.now(), Tasks: c.src.Tasks()}
}

func (c taskPages) tasksPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Tasks", "tasks", TasksBody(c.tasks()))
}

func (c taskPages) tasksFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, TaskList(c.tasks(), c.session(r).CanAct))
}

func (c taskPages) cancelTask(w http.ResponseWriter, r *http.Request) (string, Flash) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		return "/console/tasks", Flash{Message: "bad task id"}
	}
	back := "/console/tasks"
	if b := r.PostForm.Get("back"); b != "" {
		back = safeNext(b)
	}
	t, err := c.src.CancelTask(r.Context(), id)
	if err != nil {
		return back, Flash{Message: fmt.Sprintf("Cancelling task %d refused: %s", id, errMessage(err))}
	}
	return back, Flash{OK: true, Message: fmt.Sprintf("Task %d is %s.", t.ID, t.Status)}
}
